using Microsoft.CodeAnalysis;

namespace ChannelPool.ServiceModel.Generators.Tests.Generator;

/// <summary>The shapes of contract and generated client the twin must follow, each compiled with the generator in memory.</summary>
[TestFixture]
public sealed class GeneratedShapeTests
{
    private const string Usings = """
        using System;
        using System.ServiceModel;
        using System.ServiceModel.Channels;
        using System.Threading.Tasks;
        using ChannelPool.ServiceModel;
        namespace App;

        """;

    [Test]
    public void BeginAndEndOperations_AreWrittenAsCallsThroughChannel()
    {
        var run = Compile("""
            [ServiceContract] public interface ILegacy
            {
                [OperationContract(AsyncPattern = true)] IAsyncResult BeginLookup(int id, AsyncCallback? callback, object? state);
                string EndLookup(IAsyncResult result);
                [OperationContract] string Lookup(int id);
            }
            [PooledClient] partial class LegacyClient : PooledClientBase<ILegacy>;
            """);

        Assert.That(run.CompilerErrors, Is.Empty);
        Assert.That(run.PublicMethods("App.LegacyClient"), Is.EquivalentTo(new[] { "BeginLookup", "EndLookup", "Lookup" }));
        Assert.That(run.GeneratedSource("LegacyClient.PooledClient.g.cs"), Does.Contain("public global::System.IAsyncResult BeginLookup(int id, global::System.AsyncCallback? callback, object? state) => Channel.BeginLookup(id, callback, state);"));
    }

    [Test]
    public void RefOutAndKeywordNamedParametersAndBaseContracts_Compile()
    {
        var run = Compile("""
            [ServiceContract] public interface IBase { [OperationContract] void Ping(); }
            [ServiceContract] public interface IOther { [OperationContract] void Ping(); }
            [ServiceContract] public interface IOrders : IBase, IOther
            {
                [OperationContract] bool TryGet(int id, out string name, ref int version, string @event = "created");
            }
            [PooledClient] partial class OrdersClient : PooledClientBase<IOrders>;
            """);

        var source = run.GeneratedSource("OrdersClient.PooledClient.g.cs");
        Assert.That(run.CompilerErrors, Is.Empty);
        Assert.That(source, Does.Contain("public bool TryGet(int id, out string name, ref int version, string @event = \"created\") => Channel.TryGet(id, out name, ref version, @event);"));
        Assert.That(source, Does.Contain("public void Ping() => ((global::App.IBase)Channel).Ping();"));
        Assert.That(source, Does.Contain("void global::App.IOther.Ping() => ((global::App.IOther)Channel).Ping();"), "the second base contract's Ping has the same signature: implemented explicitly");
    }

    [Test]
    public void AMessageContractOperation_IsExplicitOnTheTwin_AndTheToolsUnwrappedOverloadIsCopied()
    {
        // dotnet-svcutil's message-contract operations: the contract takes the request message, the client implements it
        // explicitly and adds an overload of its own that takes and returns the message's parts.
        var run = Compile("""
            [MessageContract] public partial class GetRequest { [MessageBodyMember] public int Id; public GetRequest() { } }
            [MessageContract] public partial class GetResponse { [MessageBodyMember] public string? Name; [MessageBodyMember] public int Version; }
            [ServiceContract] public interface IStore { [OperationContract] GetResponse Get(GetRequest request); }
            [System.CodeDom.Compiler.GeneratedCodeAttribute("Microsoft.Tools.ServiceModel.Svcutil", "8.0.0")]
            public partial class StoreClient : ClientBase<IStore>, IStore
            {
                public StoreClient(Binding binding, EndpointAddress remoteAddress) : base(binding, remoteAddress) { }
                [System.ComponentModel.EditorBrowsableAttribute(System.ComponentModel.EditorBrowsableState.Advanced)]
                App.GetResponse App.IStore.Get(App.GetRequest request)
                {
                    return base.Channel.Get(request);
                }
                public string? Get(int Id, ref int Version)
                {
                    App.GetRequest inValue = new App.GetRequest();
                    inValue.Id = Id;
                    App.GetResponse retVal = ((App.IStore)(this)).Get(inValue);
                    Version = retVal.Version;
                    return retVal.Name;
                }
                public string Where()
                {
                    return this.Endpoint.Address.ToString();
                }
            }
            [PooledClient(typeof(StoreClient))] public partial class PooledStoreClient : PooledClientBase<IStore>;
            """);

        var source = run.GeneratedSource("PooledStoreClient.PooledClient.g.cs");
        Assert.That(run.CompilerErrors, Is.Empty);
        Assert.That(source, Does.Contain("global::App.GetResponse global::App.IStore.Get(global::App.GetRequest request) => Channel.Get(request);"));
        Assert.That(run.PublicMethods("App.PooledStoreClient"), Is.EquivalentTo(new[] { "Get" }), "the unwrapped overload is copied; Where, which reads ClientBase's Endpoint, is not");
        Assert.That(run.Type("App.PooledStoreClient").GetMembers("Get").OfType<IMethodSymbol>().Single(m => m.DeclaredAccessibility == Accessibility.Public).Parameters.Select(p => p.RefKind), Is.EqualTo(new[] { RefKind.None, RefKind.Ref }));
        Assert.That(run.Type("App.PooledStoreClient").InstanceConstructors.Select(c => c.Parameters.Length), Is.EquivalentTo(new[] { 2, 1 }), "(Binding, EndpointAddress) mirrored, plus the pool constructor");
    }

    [Test]
    public void AClientWithSeveralEndpoints_HasNoParameterlessConstructor_AndNeitherHasItsTwin()
    {
        var run = Compile(Client("public", endpoints: ["BasicHttpBinding_IEcho", "WSHttpBinding_IEcho"]) + """
            [PooledClient(typeof(EchoClient))] public partial class PooledEchoClient : PooledClientBase<IEcho>;
            class Use
            {
                object Run(Microsoft.Extensions.DependencyInjection.IServiceCollection services) =>
                    Microsoft.Extensions.DependencyInjection.ServiceChannelPoolServiceCollectionExtensions.AddPooledClient<IEcho, PooledEchoClient>(
                        services, "echo", (endpoint, _) => PooledEchoClient.UseEndpoint(endpoint, EchoClient.EndpointConfiguration.WSHttpBinding_IEcho));
            }
            """);

        var constructors = run.Type("App.PooledEchoClient").InstanceConstructors.Select(c => string.Join(",", c.Parameters.Select(p => p.Type.Name)));
        Assert.That(run.CompilerErrors, Is.Empty);
        Assert.That(constructors, Is.EquivalentTo(new[] { "EndpointConfiguration", "EndpointConfiguration,String", "EndpointConfiguration,EndpointAddress", "Binding,EndpointAddress", "ServiceChannelPool" }));
    }

    [Test]
    public void AnInternalGeneratedClient_GetsInternalTwinMembersThatMentionItsTypes()
    {
        var run = Compile(Client("internal", endpoints: ["BasicHttpBinding_IEcho"]) + """
            [PooledClient(typeof(EchoClient))] internal partial class PooledEchoClient : PooledClientBase<IEcho>;
            """);

        Assert.That(run.CompilerErrors, Is.Empty);
        Assert.That(run.Type("App.PooledEchoClient").GetMembers("UseEndpoint").Select(m => m.DeclaredAccessibility), Has.All.EqualTo(Accessibility.Internal));
    }

    [Test]
    public void MembersTheTwinDeclaresItself_AreLeftToIt()
    {
        var run = Compile(Client("public", endpoints: ["BasicHttpBinding_IEcho"]) + """
            [PooledClient(typeof(EchoClient))]
            public partial class PooledEchoClient : PooledClientBase<IEcho>
            {
                public PooledEchoClient(EchoClient.EndpointConfiguration endpointConfiguration) : base(new BasicHttpBinding(), new EndpointAddress("http://127.0.0.1/mine")) { }
                public string Echo(string text) => "mine";
            }
            """);

        var source = run.GeneratedSource("PooledEchoClient.PooledClient.g.cs");
        Assert.That(run.CompilerErrors, Is.Empty);
        Assert.That(source, Does.Not.Contain("PooledEchoClient(global::App.EchoClient.EndpointConfiguration endpointConfiguration)"));
        Assert.That(source, Does.Not.Contain(" Echo(string text)"));
        Assert.That(source, Does.Contain(" EchoAsync(string text)"));
    }

    // A client in dotnet-svcutil's shape: one parameterless constructor only when there is one endpoint.
    private static string Client(string accessibility, string[] endpoints)
    {
        var parameterless = endpoints.Length == 1
            ? $$"""
                public EchoClient() : base(EchoClient.GetDefaultBinding(), EchoClient.GetDefaultEndpointAddress())
                {
                    this.Endpoint.Name = EndpointConfiguration.{{endpoints[0]}}.ToString();
                    ConfigureEndpoint(this.Endpoint, this.ClientCredentials);
                }
                private static Binding GetDefaultBinding() => EchoClient.GetBindingForEndpoint(EndpointConfiguration.{{endpoints[0]}});
                private static EndpointAddress GetDefaultEndpointAddress() => EchoClient.GetEndpointAddress(EndpointConfiguration.{{endpoints[0]}});
            """
            : string.Empty;
        return $$"""
            [ServiceContract] {{accessibility}} interface IEcho
            {
                [OperationContract] string Echo(string text);
                [OperationContract(Action = "urn:e/IEcho/Echo", ReplyAction = "urn:e/IEcho/EchoResponse")] Task<string> EchoAsync(string text);
            }
            {{accessibility}} partial class EchoClient : ClientBase<IEcho>, IEcho
            {
                static partial void ConfigureEndpoint(System.ServiceModel.Description.ServiceEndpoint serviceEndpoint, System.ServiceModel.Description.ClientCredentials clientCredentials);
            {{parameterless}}
                public EchoClient(EndpointConfiguration endpointConfiguration) : base(EchoClient.GetBindingForEndpoint(endpointConfiguration), EchoClient.GetEndpointAddress(endpointConfiguration)) { }
                public EchoClient(EndpointConfiguration endpointConfiguration, string remoteAddress) : base(EchoClient.GetBindingForEndpoint(endpointConfiguration), new EndpointAddress(remoteAddress)) { }
                public EchoClient(EndpointConfiguration endpointConfiguration, EndpointAddress remoteAddress) : base(EchoClient.GetBindingForEndpoint(endpointConfiguration), remoteAddress) { }
                public EchoClient(Binding binding, EndpointAddress remoteAddress) : base(binding, remoteAddress) { }
                public string Echo(string text) => Channel.Echo(text);
                public Task<string> EchoAsync(string text) => Channel.EchoAsync(text);
                private static Binding GetBindingForEndpoint(EndpointConfiguration endpointConfiguration) => new BasicHttpBinding();
                private static EndpointAddress GetEndpointAddress(EndpointConfiguration endpointConfiguration) => new EndpointAddress("http://127.0.0.1/echo");
                public enum EndpointConfiguration { {{string.Join(", ", endpoints)}} }
            }

            """;
    }

    private static GeneratorRun Compile(string source) => GeneratorHarness.Run(("App.cs", Usings + source));
}
