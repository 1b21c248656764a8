using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;
using ChannelPool.Testing;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>
/// <c>AddChannelPool&lt;TContract&gt;</c> and <c>AddPooledClient&lt;TContract, TProxy&gt;</c> in a real generic host,
/// against real services on 127.0.0.1: warm-up at start, drain at stop, options from configuration, validation, keyed
/// resolution, health checks and credentials.
/// </summary>
[TestFixture]
public sealed class HostingTests
{
    [Test]
    public async Task APooledClient_IsWarmWhenTheHostHasStarted_AndItsCallsPayNoHandshakes()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var host = TestHost.Create(services => services
            .AddPooledClient<IEchoService, EchoProxy>("echo", EndpointOf<IEchoService>(service))
            .Configure(o => o.PoolSize = 4)
            .ConfigureStartup(o => o.WaitForReadyChannels = 2));

        await host.StartAsync();
        var atStart = service.Counters.Snapshot();
        var pool = host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("echo");
        await Eventually.That(() => pool.GetSnapshot() is { Idle: 4, Opening: 0 }, () => $"the pool filled to its size ({pool.GetSnapshot()})");
        var warm = service.Counters.Snapshot();

        for (var i = 0; i < 10; i++)
        {
            await using var scope = host.Services.CreateAsyncScope();
            var proxy = scope.ServiceProvider.GetRequiredService<EchoProxy>();
            Assert.That(proxy.Echo($"call {i}"), Is.EqualTo($"call {i}"));
        }

        var duringCalls = service.Counters.Snapshot() - warm;
        Assert.That(atStart.TlsHandshakes, Is.GreaterThanOrEqualTo(2), "start-up waited for the channels Startup.WaitForReadyChannels asks for");
        Assert.That(atStart.SessionsStarted, Is.GreaterThanOrEqualTo(2));
        Assert.That(atStart.Calls, Is.Zero, "no call was made during start-up");
        Assert.That(warm.TlsHandshakes, Is.EqualTo(4), "one handshake per pre-opened channel");
        Assert.That(duringCalls.TlsHandshakes, Is.Zero, "no proxy paid for a handshake");
        Assert.That(duringCalls.SessionsStarted, Is.Zero, "reuse mode: the proxies leased the pre-opened sessions");
        Assert.That(duringCalls.Calls, Is.EqualTo(10));
        Assert.That(pool.GetSnapshot().Leased, Is.Zero, "ending the scope closed every proxy, which gave its channel back");
        await host.StopAsync();
    }

    [Test]
    public async Task AProxyWithOnlyAParameterlessConstructor_GetsItsPoolFromTheRegistration()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var host = TestHost.Create(services => services
            .AddPooledClient<ISomeService, MyProxy>("some", EndpointOf<ISomeService>(service))
            .Configure(o => o.PoolSize = 2)
            .ConfigureStartup(o => o.WaitForReadyChannels = 2));
        await host.StartAsync();
        var pool = host.Services.GetRequiredKeyedService<ServiceChannelPool<ISomeService>>("some");

        string reply;
        MyProxy proxy;
        await using (var scope = host.Services.CreateAsyncScope())
        {
            proxy = scope.ServiceProvider.GetRequiredService<MyProxy>();
            reply = proxy.Echo("Hello");
        }

        Assert.That(ChannelPoolFactory<ISomeService>.Current, Is.Null, "the static factory was never initialized");
        Assert.That(reply, Is.EqualTo("Hello"));
        Assert.That(proxy.ServiceChannelPool, Is.SameAs(pool), "the registration handed the proxy its keyed pool");
        Assert.That(proxy.State, Is.EqualTo(System.ServiceModel.CommunicationState.Closed), "the scope closed the proxy");
        Assert.That(service.Counters.Calls, Is.EqualTo(1));
        Assert.That(service.Counters.TlsHandshakes, Is.EqualTo(2), "the call used a channel the host pre-opened");
        await host.StopAsync();
    }

    [Test]
    public async Task OptionsBoundFromConfiguration_ReachThePool_AndAConfiguredLeaseModeOverridesTheContractDefault()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        var configuration = new Dictionary<string, string?>
        {
            ["ChannelPool:Pools:echo:PoolSize"] = "3",
            ["ChannelPool:Pools:echo:MaxChannels"] = "7",
            ["ChannelPool:Pools:echo:RefillThreshold"] = "1",
            ["ChannelPool:Pools:echo:ChannelLifetime"] = "00:01:10",
            ["ChannelPool:Pools:echo:LeaseMode"] = "SingleUse",
            ["ChannelPool:Pools:echo:Startup:WaitForReadyChannels"] = "3",
            ["ChannelPool:Pools:counter:PoolSize"] = "1",
            ["ChannelPool:Pools:counter:LeaseMode"] = "Reuse",
        };
        await using var host = TestHost.Create(
            services =>
            {
                services.AddPooledClient<IEchoService, EchoProxy>("echo", EndpointOf<IEchoService>(service)).BindConfiguration();
                services.AddChannelPool<ISessionCounter>("counter", CounterEndpointOf(service)).BindConfiguration();
            },
            configuration);

        await host.StartAsync();
        var echo = host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("echo");
        var atStart = echo.GetSnapshot();
        var counter = host.Services.GetRequiredKeyedService<ServiceChannelPool<ISessionCounter>>("counter");

        Assert.That(echo.PoolSize, Is.EqualTo(3));
        Assert.That(echo.MaxChannels, Is.EqualTo(7));
        Assert.That(echo.RefillThreshold, Is.EqualTo(1));
        Assert.That(echo.Name, Is.EqualTo("echo"));
        Assert.That(echo.LeaseMode, Is.EqualTo(LeaseMode.SingleUse), "configuration replaced the Reuse default of a contract without sessions");
        Assert.That(counter.LeaseMode, Is.EqualTo(LeaseMode.Reuse), "configuration replaced the SingleUse default of a contract that requires sessions");
        Assert.That(counter.PoolSize, Is.EqualTo(1));
        Assert.That(atStart.TotalOpened, Is.GreaterThanOrEqualTo(3), "Startup:WaitForReadyChannels from configuration held start-up until three channels were open");

        // Single use, from configuration: every proxy gets a channel of its own, which is closed after it.
        await echo.WarmUpAsync(readyChannels: 3);
        var before = service.Counters.Snapshot();
        for (var i = 0; i < 3; i++)
        {
            await using var scope = host.Services.CreateAsyncScope();
            Assert.That(scope.ServiceProvider.GetRequiredService<EchoProxy>().Echo("x"), Is.EqualTo("x"));
        }

        await Eventually.That(
            () => service.Counters.SessionsEnded - before.SessionsEnded >= 3,
            () => $"each single-use channel was closed after its proxy ({service.Counters.Snapshot() - before})");
        await host.StopAsync();
    }

    [Test]
    public async Task AddressesAndBalancingBoundFromConfiguration_MakeOneBalancedPool()
    {
        using var certificate = TestCertificate.CreateEcdsa();
        await using var first = await NetTcpTestHost.StartAsync(certificate);
        await using var second = await NetTcpTestHost.StartAsync(certificate);
        var configuration = new Dictionary<string, string?>
        {
            ["ChannelPool:Pools:echo:PoolSize"] = "4",
            ["ChannelPool:Pools:echo:Addresses:0"] = first.EchoAddress.ToString(),
            ["ChannelPool:Pools:echo:Addresses:1"] = second.EchoAddress.ToString(),
            ["ChannelPool:Pools:echo:DnsIdentity"] = TestCertificate.DnsName,
            ["ChannelPool:Pools:echo:Balancing:Policy"] = "RoundRobin",
            ["ChannelPool:Pools:echo:Balancing:ConsecutiveFailures"] = "3",
        };
        await using var host = TestHost.Create(
            services => services
                .AddPooledClient<IEchoService, EchoProxy>("echo", (endpoint, _) =>
                {
                    endpoint.Binding = NetTcpTestHost.CreateBinding();
                    endpoint.ConfigureChannelFactory = factory => TestCertificate.TrustOnly(factory.Credentials, certificate);
                })
                .BindConfiguration()
                .BindAddresses(),
            configuration);
        await host.StartAsync();
        var pool = host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("echo");

        for (var i = 0; i < 10; i++)
        {
            await using var scope = host.Services.CreateAsyncScope();
            Assert.That(scope.ServiceProvider.GetRequiredService<EchoProxy>().Echo("x"), Is.EqualTo("x"));
        }

        Assert.That(pool.Addresses.Select(a => a.Uri), Is.EqualTo(new[] { first.EchoAddress, second.EchoAddress }));
        Assert.That((first.Counters.Calls, second.Counters.Calls), Is.EqualTo((5L, 5L)), "round robin, from configuration");
        Assert.That(pool.PoolSize, Is.EqualTo(4));
        await host.StopAsync();
    }

    [Test]
    public async Task AConfiguredAddressThatIsNotAUri_FailsStart_NamingTheKey()
    {
        var configuration = new Dictionary<string, string?> { ["ChannelPool:Pools:echo:Addresses:0"] = "not a uri" };
        await using var host = TestHost.Create(
            services => services
                .AddPooledClient<IEchoService, EchoProxy>("echo", (endpoint, _) => endpoint.Binding = NetTcpTestHost.CreateBinding())
                .BindAddresses(),
            configuration);

        var error = Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());
        Assert.That(error!.Message, Does.Contain("Channel pool 'echo': Addresses:0 is 'not a uri', which is not an absolute URI"));
    }

    [Test]
    public async Task OptionsBoundFromConfigurationWithoutALeaseMode_KeepTheContractDefault()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var host = TestHost.Create(
            services =>
            {
                services.AddChannelPool<ISessionCounter>("counter", CounterEndpointOf(service)).BindConfiguration();
                services.AddChannelPool<ISessionCounter>("counter-in-code", CounterEndpointOf(service)).Configure(o => o.PoolSize = 1);
            },
            new Dictionary<string, string?> { ["ChannelPool:Pools:counter:PoolSize"] = "1" });

        await host.StartAsync();
        var counter = host.Services.GetRequiredKeyedService<ServiceChannelPool<ISessionCounter>>("counter");
        var counterInCode = host.Services.GetRequiredKeyedService<ServiceChannelPool<ISessionCounter>>("counter-in-code");

        Assert.That(counter.PoolSize, Is.EqualTo(1), "the section was bound");
        Assert.That(counterInCode.LeaseMode, Is.EqualTo(LeaseMode.SingleUse), "options set in code keep the default of a contract that requires sessions");
        Assert.That(
            counter.LeaseMode,
            Is.EqualTo(LeaseMode.SingleUse),
            "a section that says nothing about LeaseMode keeps the default of a contract that requires sessions, so no session state passes between callers");
        await host.StopAsync();
    }

    [Test]
    public async Task StoppingTheHost_DrainsThePool_AndEndsEveryServerSessionWithAnEndRecord()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var host = TestHost.Create(services => services
            .AddPooledClient<IEchoService, EchoProxy>("echo", EndpointOf<IEchoService>(service))
            .Configure(o => o.PoolSize = 3)
            .ConfigureStartup(o => o.WaitForReadyChannels = 3));
        await host.StartAsync();
        await using (var scope = host.Services.CreateAsyncScope())
        {
            Assert.That(scope.ServiceProvider.GetRequiredService<EchoProxy>().Echo("x"), Is.EqualTo("x"));
        }

        var pool = host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("echo");
        await Eventually.That(() => pool.GetSnapshot() is { Idle: 3, Opening: 0 }, () => $"the pool filled ({pool.GetSnapshot()})");
        Assert.That(service.Counters.SessionsEnded, Is.Zero, "nothing was closed before the host stopped");

        await host.StopAsync();

        await Eventually.That(
            () => service.Counters.SessionsStarted >= 3 && service.Counters.SessionsEnded == service.Counters.SessionsStarted,
            () => $"every session ended when the host stopped ({service.Counters.Snapshot()})");
        Assert.That(service.Counters.EndRecords, Is.GreaterThan(0), "the drain closed sessions politely, not by dropping the connection");
        Assert.That(pool.GetSnapshot(), Has.Property(nameof(ChannelPoolSnapshot.Idle)).Zero.And.Property(nameof(ChannelPoolSnapshot.Leased)).Zero);
    }

    [Test]
    public async Task AnEndpointCallbackThatSetsNoBinding_FailsStart_NamingThePoolAndTheBinding()
    {
        await using var host = TestHost.Create(services => services
            .AddPooledClient<IEchoService, EchoProxy>("no-binding", (endpoint, _) => endpoint.Address = UnusedAddress)
            .Configure(o => o.PoolSize = 1));

        var error = Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.That(error!.Message, Does.Contain("'no-binding'").And.Contain("Binding is not set"));
        Assert.That(error.OptionsName, Is.EqualTo("no-binding"));
    }

    [Test]
    public async Task AnEndpointCallbackThatSetsNoAddress_FailsStart_NamingThePoolAndTheAddress()
    {
        await using var host = TestHost.Create(services => services
            .AddPooledClient<IEchoService, EchoProxy>("no-address", (endpoint, _) => endpoint.Binding = NetTcpTestHost.CreateBinding())
            .Configure(o => o.PoolSize = 1));

        var error = Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.That(error!.Message, Does.Contain("'no-address'").And.Contain("Address is not set"));
        Assert.That(error.OptionsName, Is.EqualTo("no-address"));
    }

    [Test]
    public async Task AConfiguredChannelLifetimeNotShorterThanTheReceiveTimeout_FailsStart()
    {
        await using var host = TestHost.Create(
            services => services.AddPooledClient<IEchoService, EchoProxy>("echo", (endpoint, _) =>
            {
                var binding = NetTcpTestHost.CreateBinding();
                binding.ReceiveTimeout = TimeSpan.FromSeconds(30);
                endpoint.Binding = binding;
                endpoint.Address = UnusedAddress;
            }).BindConfiguration(),
            new Dictionary<string, string?>
            {
                ["ChannelPool:Pools:echo:PoolSize"] = "1",
                ["ChannelPool:Pools:echo:ChannelLifetime"] = "00:01:30",
            });

        var error = Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.That(
            error!.Message,
            Does.Contain("'echo'").And.Contain("ChannelLifetime (00:01:30)").And.Contain("ReceiveTimeout (00:00:30)"));
    }

    [Test]
    public async Task AConfiguredChannelLifetimeShorterThanTheReceiveTimeout_Starts()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var host = TestHost.Create(
            services => services.AddPooledClient<IEchoService, EchoProxy>("echo", (endpoint, _) =>
            {
                var binding = service.Binding;
                binding.ReceiveTimeout = TimeSpan.FromSeconds(30);
                endpoint.Binding = binding;
                endpoint.Address = service.EchoAddress;
                endpoint.ConfigureChannelFactory = service.Configure;
            }).BindConfiguration(),
            new Dictionary<string, string?>
            {
                ["ChannelPool:Pools:echo:PoolSize"] = "1",
                ["ChannelPool:Pools:echo:ChannelLifetime"] = "00:00:20",
                ["ChannelPool:Pools:echo:Startup:WaitForReadyChannels"] = "1",
            });

        await host.StartAsync();

        Assert.That(service.Counters.SessionsStarted, Is.EqualTo(1), "the default lifetime of 90 s would have conflicted: the configured 20 s was used");
        await host.StopAsync();
    }

    [Test]
    public void RegisteringAPoolNameTwice_ThrowsNamingThePool()
    {
        var services = new ServiceCollection();
        services.AddPooledClient<IEchoService, EchoProxy>("echo", (_, _) => { });

        var sameContract = Assert.Throws<InvalidOperationException>(() => services.AddPooledClient<IEchoService, EchoProxy>("echo", (_, _) => { }));
        var otherContract = Assert.Throws<InvalidOperationException>(() => services.AddChannelPool<ISessionCounter>("echo", (_, _) => { }));

        Assert.That(sameContract!.Message, Does.Contain("'echo'").And.Contain("already registered"));
        Assert.That(otherContract!.Message, Does.Contain("'echo'").And.Contain("already registered"));
    }

    [Test]
    public async Task TheUnkeyedPool_IsTheFirstRegistered_AndEachPoolResolvesByItsName()
    {
        await using var first = await TestService.StartAsync(Transport.NetTcp);
        await using var second = await TestService.StartAsync(Transport.NetTcp);
        await using var host = TestHost.Create(services =>
        {
            services.AddChannelPool<IEchoService>("first", EndpointOf<IEchoService>(first))
                .Configure(o => o.PoolSize = 2)
                .ConfigureStartup(o => o.WaitForReadyChannels = 2);
            services.AddChannelPool<IEchoService>("second", EndpointOf<IEchoService>(second))
                .Configure(o => o.PoolSize = 3)
                .ConfigureStartup(o => o.WaitForReadyChannels = 3);
        });
        await host.StartAsync();

        var unkeyed = host.Services.GetRequiredService<ServiceChannelPool<IEchoService>>();
        var byFirst = host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("first");
        var bySecond = host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("second");

        Assert.That(unkeyed, Is.SameAs(byFirst));
        Assert.That(bySecond, Is.Not.SameAs(byFirst));
        Assert.That((byFirst.Name, byFirst.PoolSize, byFirst.Address.Uri.Port), Is.EqualTo(("first", 2, first.Port)));
        Assert.That((bySecond.Name, bySecond.PoolSize, bySecond.Address.Uri.Port), Is.EqualTo(("second", 3, second.Port)));
        Assert.That(host.Services.GetRequiredKeyedService<IChannelPool>("second"), Is.SameAs(bySecond));
        Assert.That(first.Counters.SessionsStarted, Is.GreaterThanOrEqualTo(2), "the host warmed the first pool against its own service");
        Assert.That(second.Counters.SessionsStarted, Is.GreaterThanOrEqualTo(3), "the host warmed the second pool against its own service");

        await using (var proxy = new EchoProxy(bySecond))
        {
            Assert.That(proxy.Echo("to second"), Is.EqualTo("to second"));
        }

        Assert.That((first.Counters.Calls, second.Counters.Calls), Is.EqualTo((0L, 1L)));
        await host.StopAsync();
    }

    [Test]
    public async Task TheHealthCheck_ReportsAWarmPoolHealthy_AndAColdOneUnhealthy()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var host = TestHost.Create(services => services
            .AddPooledClient<IEchoService, EchoProxy>("echo", EndpointOf<IEchoService>(service))
            .Configure(o => o.PoolSize = 3)
            .ConfigureStartup(o => o.WaitForReadyChannels = 3)
            .AddHealthCheck());
        var health = host.Services.GetRequiredService<HealthCheckService>();

        var cold = await health.CheckHealthAsync();
        await host.StartAsync();
        var pool = host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("echo");
        await Eventually.That(() => pool.GetSnapshot() is { Idle: 3, Opening: 0 }, () => $"the pool filled ({pool.GetSnapshot()})");
        var warm = await health.CheckHealthAsync();

        Assert.That(cold.Entries["channelpool:echo"].Status, Is.EqualTo(HealthStatus.Unhealthy), "before start no channel was open");
        Assert.That(warm.Entries["channelpool:echo"].Status, Is.EqualTo(HealthStatus.Healthy), warm.Entries["channelpool:echo"].Description);
        Assert.That(warm.Entries["channelpool:echo"].Data["idle"], Is.EqualTo(3));
        Assert.That(warm.Status, Is.EqualTo(HealthStatus.Healthy));
        await host.StopAsync();
    }

    [Test]
    public async Task CredentialsSetOnAResolvedProxyBeforeItsFirstCall_SelectAnotherPool()
    {
        await using var service = await TestService.StartAsync(Transport.UserName);
        await using var host = TestHost.Create(services => services
            .AddPooledClient<IEchoService, EchoProxy>("secure", EndpointOf<IEchoService>(service))
            .Configure(o => o.PoolSize = 2)
            .ConfigureStartup(o => o.WaitForReadyChannels = 1));
        await host.StartAsync();
        var pool = host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("secure");

        string asBob;
        string asConfigured;
        EchoProxy bob;
        await using (var scope = host.Services.CreateAsyncScope())
        {
            bob = scope.ServiceProvider.GetRequiredService<EchoProxy>();
            bob.ClientCredentials.UserName.UserName = TestUsers.Bob;
            bob.ClientCredentials.UserName.Password = TestUsers.BobPassword;
            var configured = scope.ServiceProvider.GetRequiredService<EchoProxy>();

            asBob = bob.WhoAmI();
            asConfigured = configured.WhoAmI();
        }

        Assert.That(asBob, Is.EqualTo(TestUsers.Bob));
        Assert.That(asConfigured, Is.EqualTo(TestUsers.Alice), "a proxy left alone uses the endpoint's own credentials");
        var bobPool = pool.GetPool(bob.ClientCredentials);
        Assert.That(bobPool, Is.Not.SameAs(pool.DefaultPool), "bob's credentials have a pool of their own");
        Assert.That(bobPool.GetSnapshot(), Has.Property(nameof(ChannelPoolSnapshot.TotalOpened)).GreaterThanOrEqualTo(1).And.Property(nameof(ChannelPoolSnapshot.Leased)).Zero);
        await host.StopAsync();
    }

    [Test]
    public async Task AHostWithProxiesNobodyClosed_StopsWithoutWaitingForThem()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var host = TestHost.Create(services => services
            .AddPooledClient<IEchoService, EchoProxy>("echo", EndpointOf<IEchoService>(service))
            .Configure(o => o.DrainTimeout = TimeSpan.FromSeconds(30))
            .Services
            .AddPooledClient<ISessionCounter, CounterProxy>("counter", CounterEndpointOf(service))
            .Configure(o => o.DrainTimeout = TimeSpan.FromSeconds(30)));
        await host.StartAsync();

        // Made outside any scope and never closed, as code that forgets CloseAsync leaves them.
        var echo = ActivatorUtilities.CreateInstance<EchoProxy>(host.Services, host.Services.GetRequiredKeyedService<ServiceChannelPool<IEchoService>>("echo"));
        var counter = ActivatorUtilities.CreateInstance<CounterProxy>(host.Services, host.Services.GetRequiredKeyedService<ServiceChannelPool<ISessionCounter>>("counter"));
        Assert.That(await echo.EchoAfterAsync("forgotten", 0), Is.EqualTo("forgotten"));
        Assert.That(counter.Increment(), Is.EqualTo(1));

        var stop = System.Diagnostics.Stopwatch.StartNew();
        await host.StopAsync();

        Assert.That(stop.Elapsed, Is.LessThan(TimeSpan.FromSeconds(5)), "the stop did not wait a DrainTimeout of 30 s for either proxy");
        GC.KeepAlive(echo);
        GC.KeepAlive(counter);
    }

    /// <summary>A net.tcp address for pools that fail before they open anything; nothing listens there.</summary>
    private static System.ServiceModel.EndpointAddress UnusedAddress => NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9/echo"));

    private static Action<ServiceEndpointOptions<TContract>, IServiceProvider> EndpointOf<TContract>(TestService service)
        where TContract : class =>
        (endpoint, _) =>
        {
            endpoint.Binding = service.Binding;
            endpoint.Address = service.EchoAddress;
            endpoint.ConfigureChannelFactory = service.Configure;
        };

    private static Action<ServiceEndpointOptions<ISessionCounter>, IServiceProvider> CounterEndpointOf(TestService service) =>
        (endpoint, _) =>
        {
            endpoint.Binding = service.Binding;
            endpoint.Address = service.CounterAddress;
            endpoint.ConfigureChannelFactory = service.Configure;
        };

    /// <summary>A generic host with in-memory configuration and nothing else added, disposed asynchronously.</summary>
    private sealed class TestHost : IAsyncDisposable
    {
        private readonly IHost _host;

        private TestHost(IHost host) => _host = host;

        public IServiceProvider Services => _host.Services;

        public static TestHost Create(Action<IServiceCollection> configureServices, IDictionary<string, string?>? configuration = null)
        {
            var builder = Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings());
            builder.Configuration.AddInMemoryCollection(configuration ?? new Dictionary<string, string?>());
            builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromSeconds(10));
            configureServices(builder.Services);
            return new TestHost(builder.Build());
        }

        public Task StartAsync() => _host.StartAsync().Within();

        public Task StopAsync() => _host.StopAsync().Within();

        public async ValueTask DisposeAsync()
        {
            if (_host is IAsyncDisposable asyncDisposable)
            {
                await asyncDisposable.DisposeAsync();
            }
            else
            {
                _host.Dispose();
            }
        }
    }
}
