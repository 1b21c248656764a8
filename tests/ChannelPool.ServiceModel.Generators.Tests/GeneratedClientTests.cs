using System.Diagnostics;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel.Soap;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using OpenTelemetry;
using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;
using ServiceReference;
using EndpointConfiguration = ServiceReference.EchoServiceClient.EndpointConfiguration;

namespace ChannelPool.ServiceModel.Generators.Tests;

/// <summary>
/// The checked-in dotnet-svcutil client (<c>ServiceReference/Reference.cs</c>), compiled unchanged beside its pooled
/// twin <see cref="PooledEchoServiceClient"/>, against SoapCore over HTTPS on 127.0.0.1: every constructor, dependency
/// injection, synchronous and <c>Task</c> calls.
/// </summary>
[TestFixture]
[NonParallelizable]
public sealed class GeneratedClientTests
{
    // The port GetEndpointAddress names in Reference.cs, so the constructors that take no address reach this fixture's
    // service. It lies below Linux's ephemeral range, where the port-0 listeners of other tests never land.
    private const int GeneratedPort = 28731;
    private const string EndpointName = nameof(EndpointConfiguration.BasicHttpsBinding_IEchoService);

    private X509Certificate2 _certificate = null!;
    private SoapTestHost _service = null!;

    private static Uri GeneratedAddress => new($"https://127.0.0.1:{GeneratedPort}/basic");

    [OneTimeSetUp]
    public async Task StartService()
    {
        _certificate = TestCertificate.Create();
        _service = await SoapTestHost.StartAsync(_certificate, GeneratedPort);
        EchoServiceClient.TrustedCertificate = _certificate;
    }

    [OneTimeTearDown]
    public async Task StopService()
    {
        EchoServiceClient.TrustedCertificate = null;
        await _service.DisposeAsync();
        _certificate.Dispose();
    }

    [SetUp]
    public void ResetCounts() => EchoServiceClient.ResetConfigureEndpointCalls();

    // Pools made by constructors outlive a proxy; each test starts without them.
    [TearDown]
    public Task DestroyPools() => ChannelPoolFactory<IEchoService>.DestroyAsync();

    [Test]
    public async Task TheTwinsSynchronousAndTaskCalls_EachMakeAClientSpanAndADuration_AndCarryTheTraceToTheService()
    {
        using var caller = new ActivitySource("ChannelPool.ServiceModel.Generators.Tests.Caller");
        var spans = new List<Activity>();
        var metrics = new List<Metric>();
        using var tracing = Sdk.CreateTracerProviderBuilder().AddSource(caller.Name).AddChannelPoolInstrumentation().AddInMemoryExporter(spans).Build();
        using var metering = Sdk.CreateMeterProviderBuilder().AddChannelPoolInstrumentation().AddInMemoryExporter(metrics).Build();

        ActivityTraceId traceId;
        using (var request = caller.StartActivity("request")!)
        {
            traceId = request.TraceId;
            var client = new PooledEchoServiceClient();
            Assert.That(client.Echo("sync"), Is.EqualTo("sync"));
            Assert.That(await client.EchoAsync("task"), Is.EqualTo("task"));
            await client.CloseAsync();
        }

        tracing.ForceFlush();
        metering.ForceFlush();
        var calls = spans.Where(span => span.Source.Name == CallTelemetry.ActivitySourceName && span.TraceId == traceId).ToList();
        Assert.That(calls.Select(span => span.DisplayName), Is.EqualTo(new[] { "IEchoService/Echo", "IEchoService/Echo" }));
        Assert.That(calls.Select(span => span.GetTagItem("server.port")), Is.All.EqualTo(GeneratedPort));
        Assert.That(_service.Counters.TraceParents, Is.SupersetOf(calls.Select(span => span.Id)), "the service saw each call's traceparent");
        long measured = 0;
        foreach (var metric in metrics.Where(metric => metric.Name == CallTelemetry.CallDurationName))
        {
            foreach (ref readonly var point in metric.GetMetricPoints())
            {
                measured += point.GetHistogramCount();
            }
        }

        Assert.That(measured, Is.EqualTo(2), "one rpc.client.call.duration measurement per call");
    }

    [Test]
    public void TheParameterlessConstructor_CallsTheGeneratedClientsOnlyEndpointSynchronously()
    {
        var calls = _service.Counters.Calls;

        var client = new PooledEchoServiceClient();
        var reply = client.Echo("Hello");
        client.Close();

        Assert.That(reply, Is.EqualTo("Hello"));
        Assert.That(_service.Counters.Calls - calls, Is.EqualTo(1));
        Assert.That(client.Endpoint.Name, Is.EqualTo(EndpointName), "Endpoint.Name is the endpoint configuration's name, as on the generated client");
        Assert.That(client.Endpoint.Address.Uri, Is.EqualTo(GeneratedAddress), "the address came from the generated GetEndpointAddress");
        Assert.That(EchoServiceClient.ConfigureEndpointCalls, Is.EqualTo(1), "the generated ConfigureEndpoint ran, and set the certificate the call trusted");
        Assert.That(client.State, Is.EqualTo(CommunicationState.Closed));
    }

    [Test]
    public async Task TheEndpointConfigurationConstructor_CallsAsATask_WithOpenAsyncAndCloseAsync()
    {
        var client = new PooledEchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService);

        await client.OpenAsync();
        var reply = await client.EchoAsync("Hello");
        await client.CloseAsync();

        Assert.That(reply, Is.EqualTo("Hello"));
        Assert.That(client.Endpoint.Name, Is.EqualTo(EndpointName));
        Assert.That(client.Endpoint.Address.Uri, Is.EqualTo(GeneratedAddress));
        Assert.That(EchoServiceClient.ConfigureEndpointCalls, Is.EqualTo(1));
        Assert.That(client.State, Is.EqualTo(CommunicationState.Closed));
    }

    [Test]
    public async Task TheRemoteAddressConstructors_CallTheAddressTheyAreGiven([Values] bool addressAsString)
    {
        await using var other = await SoapTestHost.StartAsync(_certificate);
        var atGenerated = _service.Counters.Calls;

        var client = addressAsString
            ? new PooledEchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService, other.BasicAddress.ToString())
            : new PooledEchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService, new EndpointAddress(other.BasicAddress));
        var sync = client.Echo("sync");
        var task = await client.EchoAsync("task");
        client.Close();

        Assert.That((sync, task), Is.EqualTo(("sync", "task")));
        Assert.That(other.Counters.Calls, Is.EqualTo(2), "both calls went to the given address");
        Assert.That(_service.Counters.Calls, Is.EqualTo(atGenerated), "none went to the generated address");
        Assert.That(client.Endpoint.Address.Uri, Is.EqualTo(other.BasicAddress));
        Assert.That(client.Endpoint.Name, Is.EqualTo(EndpointName), "the binding and name still come from the endpoint configuration");
        Assert.That(EchoServiceClient.ConfigureEndpointCalls, Is.EqualTo(1));
    }

    [Test]
    public async Task TheBindingAndAddressConstructor_RunsNoConfigureEndpoint_AndTakesCredentialsSetBeforeTheFirstCall()
    {
        var client = new PooledEchoServiceClient(SoapTestHost.CreateBasicBinding(), new EndpointAddress(_service.BasicAddress));
        TestCertificate.TrustOnly(client.ClientCredentials, _certificate);

        var sync = client.Echo("sync");
        var task = await client.EchoAsync("task");
        client.Close();

        Assert.That((sync, task), Is.EqualTo(("sync", "task")));
        Assert.That(EchoServiceClient.ConfigureEndpointCalls, Is.Zero, "as on the generated client, this constructor runs no ConfigureEndpoint");
    }

    [Test]
    public void TwinsOfOneEndpoint_ShareItsPool_AndConfigureEndpointRunsOncePerChannelFactoryNotPerProxy()
    {
        var first = new PooledEchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService);
        var pool = first.ServiceChannelPool;

        for (var i = 0; i < 20; i++)
        {
            var client = new PooledEchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService);
            Assert.That(client.Echo($"call {i}"), Is.EqualTo($"call {i}"));
            Assert.That(client.ServiceChannelPool, Is.SameAs(pool));
            client.Close();
        }

        Assert.That(EchoServiceClient.ConfigureEndpointCalls, Is.EqualTo(1), "an opened factory's endpoint cannot change, so it is configured once, before it opens");
        Assert.That(pool.GetSnapshot().Leased, Is.Zero, "every twin gave its channel back at Close");
    }

    [Test]
    public async Task AFaultFromTheService_ReachesTheCaller_AndLeavesTheChannelUsable()
    {
        var client = new PooledEchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService);

        var syncFault = Assert.Throws<FaultException>(() => client.Fail("no such order"));
        var taskFault = Assert.ThrowsAsync<FaultException>(() => client.FailAsync("still none"));
        var after = await client.EchoAsync("after");
        client.Close();

        Assert.That(syncFault.Message, Is.EqualTo("no such order"));
        Assert.That(taskFault!.Message, Is.EqualTo("still none"));
        Assert.That(after, Is.EqualTo("after"));
    }

    [Test]
    public async Task TheReadmeSnippet_WithoutTryFinally_LosesNoChannel_WhenAThousandCallsFault()
    {
        var faults = 0;
        for (var i = 0; i < 1000; i++)
        {
            try
            {
                // As written in the README: the fault skips CloseAsync every time.
                var client = new PooledEchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService);
                _ = await client.FailAsync($"fault {i}");
                await client.CloseAsync();
            }
            catch (FaultException)
            {
                faults++;
            }
        }

        var pool = new PooledEchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService).ServiceChannelPool;
        Assert.That(faults, Is.EqualTo(1000), "every call got the service's fault; none waited out AcquireTimeout for a channel");
        Assert.That(pool.GetSnapshot(), Has.Property(nameof(ChannelPoolSnapshot.Leased)).Zero.And.Property(nameof(ChannelPoolSnapshot.Waiting)).Zero);
        var after = new PooledEchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService);
        Assert.That(await after.EchoAsync("after"), Is.EqualTo("after"));
    }

    [Test]
    public async Task TheGeneratedClientItself_StillWorksUnchanged_BesideItsTwin()
    {
        using var generated = new EchoServiceClient(EndpointConfiguration.BasicHttpsBinding_IEchoService);
        var reply = await generated.EchoAsync("generated");
        await generated.CloseAsync();

        Assert.That(reply, Is.EqualTo("generated"));
        Assert.That(generated.Endpoint.Name, Is.EqualTo(EndpointName));
        Assert.That(EchoServiceClient.ConfigureEndpointCalls, Is.EqualTo(1), "ClientBase runs ConfigureEndpoint per proxy; the twin per channel factory");
    }

    [Test]
    public void TheTwin_ImplementsEveryOperationOfTheContract_AndMirrorsEveryConstructor()
    {
        var map = typeof(PooledEchoServiceClient).GetInterfaceMap(typeof(IEchoService));
        var generatedConstructors = typeof(EchoServiceClient).GetConstructors().Select(Parameters);
        var twinConstructors = typeof(PooledEchoServiceClient).GetConstructors().Select(Parameters).ToList();

        Assert.That(map.InterfaceMethods.Select(m => m.Name), Is.EquivalentTo(new[] { "Echo", "EchoAfter", "EchoAfterAsync", "EchoAsync", "Fail", "FailAsync" }));
        Assert.That(map.TargetMethods, Has.All.Matches<System.Reflection.MethodInfo>(m => m.IsPublic && m.DeclaringType == typeof(PooledEchoServiceClient)));
        Assert.That(generatedConstructors, Is.SubsetOf(twinConstructors));
        Assert.That(twinConstructors, Does.Contain(nameof(ServiceChannelPool<IEchoService>)), "plus the constructor dependency injection uses");

        static string Parameters(System.Reflection.ConstructorInfo constructor) =>
            string.Join(", ", constructor.GetParameters().Select(p => p.ParameterType.Name.Split('`')[0]));
    }

    [Test]
    public async Task AddPooledClient_BuildsTheTwin_WithTheBindingAndAddressOfTheGeneratedEndpoint()
    {
        var builder = Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings());
        builder.Services
            .AddPooledClient<IEchoService, PooledEchoServiceClient>(
                "echo", (endpoint, _) => PooledEchoServiceClient.UseEndpoint(endpoint, EndpointConfiguration.BasicHttpsBinding_IEchoService))
            .Configure(o => o.PoolSize = 2)
            .ConfigureStartup(o => o.WaitForReadyChannels = 2);
        using var host = builder.Build();
        await host.StartAsync();
        var pool = host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("echo");
        var calls = _service.Counters.Calls;

        PooledEchoServiceClient client;
        string sync, task;
        await using (var scope = host.Services.CreateAsyncScope())
        {
            client = scope.ServiceProvider.GetRequiredService<PooledEchoServiceClient>();
            sync = client.Echo("sync");
            task = await client.EchoAsync("task");
        }

        Assert.That((sync, task), Is.EqualTo(("sync", "task")));
        Assert.That(_service.Counters.Calls - calls, Is.EqualTo(2));
        Assert.That(client.ServiceChannelPool, Is.SameAs(pool), "the container built the twin with the registered pool");
        Assert.That(pool.Binding, Is.InstanceOf<BasicHttpBinding>(), "the binding came from the generated GetBindingForEndpoint");
        Assert.That(pool.Address.Uri, Is.EqualTo(GeneratedAddress), "the address came from the generated GetEndpointAddress");
        Assert.That(client.Endpoint.Name, Is.EqualTo(EndpointName));
        Assert.That(EchoServiceClient.ConfigureEndpointCalls, Is.EqualTo(1), "ConfigureEndpoint ran on the pool's channel factory");
        Assert.That(client.State, Is.EqualTo(CommunicationState.Closed), "the scope closed the twin");
        await host.StopAsync();
    }

    [Test]
    public async Task UseEndpointWithARemoteAddress_PointsTheRegisteredPoolThere()
    {
        await using var other = await SoapTestHost.StartAsync(_certificate);
        var builder = Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings());
        builder.Services.AddPooledClient<IEchoService, PooledEchoServiceClient>(
            "echo", (endpoint, _) => PooledEchoServiceClient.UseEndpoint(endpoint, EndpointConfiguration.BasicHttpsBinding_IEchoService, other.BasicAddress.ToString()));
        using var host = builder.Build();
        await host.StartAsync();

        await using (var scope = host.Services.CreateAsyncScope())
        {
            var client = scope.ServiceProvider.GetRequiredService<PooledEchoServiceClient>();
            Assert.That(await client.EchoAsync("there"), Is.EqualTo("there"));
        }

        Assert.That(other.Counters.Calls, Is.EqualTo(1));
        await host.StopAsync();
    }

    [Test]
    public async Task AHandWrittenProxy_GetsItsOtherOperationsAndConstructorsFromTheGenerator()
    {
        var client = new HandWrittenEchoProxy(SoapTestHost.CreateBasicBinding(), new EndpointAddress(_service.BasicAddress));
        TestCertificate.TrustOnly(client.ClientCredentials, _certificate);

        var echo = client.Echo("kept");
        var whoAmI = client.WhoAmI();
        var fault = Assert.Throws<FaultException>(() => client.Fail("generated"));
        await client.CloseAsync();

        Assert.That(echo, Is.EqualTo("by hand: kept"), "the operation the proxy declares itself is left to it");
        Assert.That(whoAmI, Is.EqualTo("anonymous"));
        Assert.That(fault.Message, Is.EqualTo("generated"));
    }
}
