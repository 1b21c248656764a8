using Microsoft.CodeAnalysis;

namespace ChannelPool.ServiceModel.Generators.Tests.Generator;

/// <summary>Each diagnostic of the generator and the analyzer: the code that triggers it, its message, and look-alikes that must not.</summary>
[TestFixture]
public sealed class DiagnosticTests
{
    private const string Contracts = """
        using System.ServiceModel;
        namespace App;
        [ServiceContract] public interface IEcho { [OperationContract] string Echo(string text); }
        [ServiceContract] public interface IEchoBoth { [OperationContract] string Echo(string text); [OperationContract(Name = "Echo")] System.Threading.Tasks.Task<string> EchoAsync(string text); }
        [ServiceContract(SessionMode = SessionMode.Required)] public interface ISessionful { [OperationContract] int Increment(); }
        [ServiceContract(SessionMode = SessionMode.Allowed)] public interface ISessionAllowed { [OperationContract] int Increment(); }
        public interface ICallback { [OperationContract(IsOneWay = true)] void Notify(string text); }
        [ServiceContract(CallbackContract = typeof(ICallback))] public interface IDuplex { [OperationContract] void Subscribe(); }
        public interface INotAContract { string Echo(string text); }
        public partial class EchoClient : ClientBase<IEcho>, IEcho { public string Echo(string text) => Channel.Echo(text); }
        public class SealedEchoClient : ClientBase<IEcho>, IEcho { public string Echo(string text) => Channel.Echo(text); }
        """;

    private const string Usings = """
        using System;
        using System.ServiceModel;
        using System.ServiceModel.Channels;
        using System.Threading.Tasks;
        using ChannelPool;
        using ChannelPool.ServiceModel;
        using Microsoft.Extensions.DependencyInjection;
        namespace App;

        """;

    [TestCase("""
        class Start { void Run(Binding b, EndpointAddress a) =>
            ChannelPoolFactory<ISessionful>.Initialize(b, a, options: new ChannelPoolOptions { PoolSize = 8, MaxLeasesPerChannel = 4 }); }
        """, TestName = "CPSM001 for an options initializer passed to ChannelPoolFactory.Initialize")]
    [TestCase("""
        class Start { object Run(Binding b, EndpointAddress a) {
            var options = new ChannelPoolOptions();
            options.MaxLeasesPerChannel = 4;
            return new ServiceChannelPool<ISessionful>(b, a, options); } }
        """, TestName = "CPSM001 for a local options object set up before new ServiceChannelPool")]
    [TestCase("""
        class CounterProxy : PooledClientBase<ISessionful> { }
        class Start { void Run(IServiceCollection services) =>
            services.AddPooledClient<ISessionful, CounterProxy>("counter", (e, _) => { }).Configure(o => o.MaxLeasesPerChannel = 4); }
        """, TestName = "CPSM001 for Configure on the builder of a registered pooled client")]
    [TestCase("""
        class Start { void Run(ServiceChannelPool<ISessionful> pool) =>
            pool.Reconfigure(new ChannelPoolOptions { MaxLeasesPerChannel = 4 }); }
        """, TestName = "CPSM001 for new options given to a running pool's Reconfigure")]
    public async Task AContractThatRequiresSessionsWithSharedLeases_IsAnError(string source)
    {
        var diagnostics = await DiagnoseAsync(source);

        Assert.That(diagnostics.Select(d => d.Id), Is.EqualTo(new[] { "CPSM001" }));
        Assert.That(diagnostics[0].Severity, Is.EqualTo(DiagnosticSeverity.Error));
        Assert.That(diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture), Does.StartWith("'App.ISessionful' requires sessions (SessionMode.Required), so its pooled channels cannot be shared, but MaxLeasesPerChannel is 4"));
        Assert.That(diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture), Does.EndWith("Keep MaxLeasesPerChannel at 1 for this contract."));
        Assert.That(diagnostics[0].Location.SourceTree!.ToString()[diagnostics[0].Location.SourceSpan.Start..diagnostics[0].Location.SourceSpan.End], Does.Contain("MaxLeasesPerChannel = 4"));
    }

    [TestCase("""
        class Start { void Run(Binding b, EndpointAddress a) =>
            ChannelPoolFactory<ISessionAllowed>.Initialize(b, a, options: new ChannelPoolOptions { MaxLeasesPerChannel = 4 }); }
        """, TestName = "No CPSM001 for a contract that allows sessions")]
    [TestCase("""
        class Start { void Run(Binding b, EndpointAddress a) {
            var other = new ChannelPoolOptions { MaxLeasesPerChannel = 4 };
            ChannelPoolFactory<ISessionful>.Initialize(b, a, options: new ChannelPoolOptions { MaxLeasesPerChannel = 1 }); } }
        """, TestName = "No CPSM001 for one lease per channel, or for options never given to the pool")]
    public async Task SharedLeases_AreFineWhereNoSessionIsShared(string source)
    {
        Assert.That(await DiagnoseAsync(source), Is.Empty);
    }

    [TestCase("class DuplexProxy : PooledClientBase<IDuplex> { }", TestName = "CPSM002 for a hand-written proxy of a duplex contract")]
    [TestCase("[PooledClient] partial class DuplexTwin : PooledClientBase<IDuplex>;", TestName = "CPSM002 once for a [PooledClient] proxy of a duplex contract")]
    [TestCase("class Start { void Run(Binding b, EndpointAddress a) => ChannelPoolFactory<IDuplex>.Initialize(b, a); }", TestName = "CPSM002 for a pool of a duplex contract")]
    [TestCase("class Start { void Run(IServiceCollection services) => services.AddChannelPool<IDuplex>(\"duplex\", (e, _) => { }); }", TestName = "CPSM002 for a registered pool of a duplex contract")]
    public async Task ADuplexContract_IsAnError(string source)
    {
        var diagnostics = await DiagnoseAsync(source);

        Assert.That(diagnostics.Select(d => d.Id), Is.EqualTo(new[] { "CPSM002" }));
        Assert.That(diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture), Does.StartWith("'App.IDuplex' is a duplex contract (its callback contract is 'App.ICallback'), which ChannelPool cannot pool"));
        Assert.That(diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture), Does.Contain("Use DuplexClientBase<T> or DuplexChannelFactory<T> for this contract."));
    }

    [TestCase("private IEcho? _kept; public string Echo(string text) { _kept = Channel; return _kept.Echo(text); }", "_kept", TestName = "CPSM003 for Channel kept in a field")]
    [TestCase("private IEcho? _kept; public string Echo(string text) { _kept ??= Channel; return _kept.Echo(text); }", "_kept", TestName = "CPSM003 for Channel kept in a field on first use")]
    [TestCase("private object? Kept { get; set; } public string Echo(string text) { Kept = (object)Channel; return Channel.Echo(text); }", "Kept", TestName = "CPSM003 for Channel kept in a property")]
    public async Task AProxyThatKeepsChannelAcrossCalls_GetsAWarning(string members, string kept)
    {
        var diagnostics = await DiagnoseAsync($"class KeepingProxy : PooledClientBase<IEcho>, IEcho {{ {members} }}");

        Assert.That(diagnostics.Select(d => d.Id), Is.EqualTo(new[] { "CPSM003" }));
        Assert.That(diagnostics[0].Severity, Is.EqualTo(DiagnosticSeverity.Warning));
        Assert.That(diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture), Does.StartWith($"'KeepingProxy' keeps Channel in '{kept}'."));
        Assert.That(diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture), Does.EndWith("Read Channel in each call instead."));
    }

    [TestCase("public async Task<string> EchoTwiceAsync(string text) { var first = await Channel.EchoAsync(text); return Channel.Echo(first); }", "Echo", TestName = "CPSM004 for a synchronous operation in an async method")]
    [TestCase("public Task<string> EchoLaterAsync(string text) => Task.FromResult(Channel.Echo(text));", "Echo", TestName = "CPSM004 for a synchronous operation in a Task-returning method")]
    [TestCase("public Task<string> EchoOnPoolAsync(string text) => Task.Run(async () => { await Task.Yield(); return Channel.Echo(text); });", "Echo", TestName = "CPSM004 for a synchronous operation in an async lambda")]
    public async Task ASynchronousOperationInAnAsyncMethod_GetsAWarning(string member, string operation)
    {
        var diagnostics = await DiagnoseAsync($"class BlockingProxy : PooledClientBase<IEchoBoth>, IEchoBoth {{ public string Echo(string text) => Channel.Echo(text); public Task<string> EchoAsync(string text) => Channel.EchoAsync(text); {member} }}");

        Assert.That(diagnostics.Select(d => d.Id), Is.EqualTo(new[] { "CPSM004" }));
        Assert.That(diagnostics[0].Severity, Is.EqualTo(DiagnosticSeverity.Warning));
        Assert.That(
            diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture),
            Does.StartWith($"'BlockingProxy' calls the synchronous operation '{operation}' through Channel inside an asynchronous method"));
    }

    [Test]
    public async Task InnerChannelReadInAnAsyncMethod_GetsAWarning()
    {
        var diagnostics = await DiagnoseAsync("""
            class PinningProxy : PooledClientBase<IEchoBoth>, IEchoBoth
            {
                public string Echo(string text) => Channel.Echo(text);
                public Task<string> EchoAsync(string text) => Channel.EchoAsync(text);
                public async Task<string> TimedEchoAsync(string text) { InnerChannel.OperationTimeout = TimeSpan.FromSeconds(5); return await Channel.EchoAsync(text); }
            }
            """);

        Assert.That(diagnostics.Select(d => d.Id), Is.EqualTo(new[] { "CPSM005" }));
        Assert.That(diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture), Does.StartWith("'PinningProxy' reads InnerChannel inside an asynchronous method"));
    }

    [Test]
    public async Task TaskOperationsAndSynchronousOperationsInSynchronousMethods_GetNoWarning()
    {
        var source = """
            class GoodProxy : PooledClientBase<IEchoBoth>, IEchoBoth
            {
                public string Echo(string text) => Channel.Echo(text);
                public Task<string> EchoAsync(string text) => Channel.EchoAsync(text);
                public async Task<string> EchoTwiceAsync(string text) => await Channel.EchoAsync(await Channel.EchoAsync(text));
                public string Timed(string text) { InnerChannel.OperationTimeout = TimeSpan.FromSeconds(5); return Channel.Echo(text); }
                public Func<string, string> Later => text => Channel.Echo(text);
            }
            """;

        Assert.That(await DiagnoseAsync(source), Is.Empty);
    }

    [Test]
    public async Task AProxyThatReadsChannelInEachCall_GetsNoWarning()
    {
        var source = """
            class CallingProxy : PooledClientBase<IEcho>, IEcho
            {
                public string Echo(string text) { var channel = Channel; return channel.Echo(text); }
                public string Twice(string text) => Channel.Echo(Channel.Echo(text));
            }
            """;

        Assert.That(await DiagnoseAsync(source), Is.Empty);
    }

    [TestCase("[PooledClient] class Closed : PooledClientBase<IEcho> { }", "CPSM010", "'Closed' has [PooledClient] but is not partial, so the generator cannot add its members. Declare it 'partial class Closed'.")]
    [TestCase("class Outer { [PooledClient] public partial class Inner : PooledClientBase<IEcho>; }", "CPSM010", "'Inner' has [PooledClient] but is not partial, so the generator cannot add its members. Declare it 'partial class Inner', and its containing type 'Outer' partial too.")]
    [TestCase("[PooledClient] partial class NoBase { }", "CPSM011", "'NoBase' has [PooledClient] but does not derive from PooledClientBase<TContract>.")]
    [TestCase("[PooledClient(typeof(string))] partial class Wrong : PooledClientBase<IEcho>;", "CPSM012", "[PooledClient(typeof(string))] on 'Wrong': 'string' is not a client of 'App.IEcho'.")]
    [TestCase("[PooledClient(typeof(EchoClient))] partial class OtherContract : PooledClientBase<ISessionful>;", "CPSM012", "[PooledClient(typeof(App.EchoClient))] on 'OtherContract': 'App.EchoClient' is not a client of 'App.ISessionful'.")]
    [TestCase("[PooledClient(typeof(SealedEchoClient))] partial class Twin : PooledClientBase<IEcho>;", "CPSM013", "'Twin' cannot mirror 'App.SealedEchoClient': it is not declared partial.")]
    [TestCase("[PooledClient] partial class NotWcf : PooledClientBase<INotAContract>;", "CPSM015", "'NotWcf' pools 'App.INotAContract', which is not an interface marked [ServiceContract].")]
    public async Task AMisusedPooledClientAttribute_SaysWhatToChange(string source, string id, string message)
    {
        var diagnostics = await DiagnoseAsync(source);

        Assert.That(diagnostics.Select(d => d.Id), Is.EqualTo(new[] { id }));
        Assert.That(diagnostics[0].Severity, Is.EqualTo(DiagnosticSeverity.Error));
        Assert.That(diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture), Does.StartWith(message));
    }

    [Test]
    public async Task AnOperationNamedLikeAPooledClientBaseMember_IsImplementedExplicitlyWithAWarning()
    {
        var run = GeneratorHarness.Run(("Contracts.cs", Contracts), ("App.cs", Usings + """
            [ServiceContract] public interface IJobs { [OperationContract] Task CloseAsync(); [OperationContract] void Abort(string reason); [OperationContract] string State(); }
            [PooledClient] partial class JobsClient : PooledClientBase<IJobs>;
            class Use { Task Run(JobsClient client) { ((IJobs)client).CloseAsync(); client.Abort("kept"); ((IJobs)client).State(); return client.CloseAsync(); } }
            """));

        var diagnostics = await run.ChannelPoolDiagnosticsAsync();

        Assert.That(run.CompilerErrors, Is.Empty);
        Assert.That(diagnostics.Select(d => d.Id), Is.EqualTo(new[] { "CPSM014", "CPSM014" }), "Abort(string) is an overload, not a clash");
        Assert.That(diagnostics[0].Severity, Is.EqualTo(DiagnosticSeverity.Warning));
        Assert.That(diagnostics[0].GetMessage(System.Globalization.CultureInfo.InvariantCulture), Is.EqualTo("'CloseAsync' of 'App.IJobs' has the name of a member of PooledClientBase, so 'JobsClient' implements it explicitly. Call it through the 'App.IJobs' interface."));
        Assert.That(run.GeneratedSource("JobsClient.PooledClient.g.cs"), Does.Contain("global::System.Threading.Tasks.Task global::App.IJobs.CloseAsync() => Channel.CloseAsync();"));
    }

    private static Task<IReadOnlyList<Diagnostic>> DiagnoseAsync(string source) =>
        GeneratorHarness.Run(("Contracts.cs", Contracts), ("App.cs", Usings + source)).ChannelPoolDiagnosticsAsync();
}
