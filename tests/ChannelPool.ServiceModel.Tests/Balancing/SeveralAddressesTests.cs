using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;

namespace ChannelPool.ServiceModel.Tests.Balancing;

/// <summary>
/// One pool over several instances of a service, on real net.tcp TLS hosts on loopback: the spread of calls, an
/// instance killed and restarted, and a host name whose addresses change.
/// </summary>
[TestFixture]
public sealed class SeveralAddressesTests
{
    private X509Certificate2 _certificate = null!;
    private readonly List<NetTcpTestHost> _hosts = [];

    [SetUp]
    public void CreateCertificate() => _certificate = TestCertificate.CreateEcdsa();

    [TearDown]
    public async Task StopHosts()
    {
        foreach (var host in _hosts)
        {
            await host.StopAsync();
        }

        _hosts.Clear();
        _certificate.Dispose();
    }

    [Test]
    public async Task ThreeInstances_32Callers_SpreadTheirCallsWithin20PercentOfEven()
    {
        var hosts = await StartHostsAsync(3);
        await using var pool = CreatePool(hosts, new BalancingOptions());
        await pool.WarmUpAsync(readyChannels: 6);

        await Task.WhenAll(Enumerable.Range(0, 32).Select(caller => CallerAsync(pool, caller, calls: 20)));

        var calls = hosts.Select(h => h.Counters.Calls).ToArray();
        var even = calls.Sum() / 3.0;
        Assert.That(calls.Sum(), Is.EqualTo(32 * 20));
        Assert.That(calls, Has.All.InRange(even * 0.8, even * 1.2), $"calls per instance: {string.Join(", ", calls)}");
    }

    [Test]
    public async Task AnInstanceKilled_IsEjected_CallsAfterwardsAllSucceed_AndItComesBackAfterItRestarts()
    {
        var hosts = await StartHostsAsync(3);
        var balancing = new BalancingOptions
        {
            ConsecutiveFailures = 2,
            BaseEjectionTime = TimeSpan.FromSeconds(2),
            OutlierInterval = TimeSpan.FromMilliseconds(250),
            LatencyEjectionFactor = 0,
        };
        await using var pool = CreatePool(hosts, balancing);
        await pool.WarmUpAsync(readyChannels: 9);
        var balanced = pool.BalancedPool!;

        using var stop = new CancellationTokenSource();
        var failures = new ConcurrentQueue<(long StartedAt, long EndedAt, Exception Error)>();
        var callers = Enumerable.Range(0, 16).Select(caller => LoopAsync(pool, caller, failures, stop.Token)).ToArray();
        await Eventually.That(() => hosts[2].Counters.Calls > 20, "the third instance serves calls");

        // Killed: its listener and every connection go at once, as when its process dies.
        var port = hosts[2].Port;
        await hosts[2].StopAsync();
        await Eventually.That(
            () => balanced.GetEndpoints()[2].State == EndpointState.Ejected,
            () => $"the killed instance is ejected ({string.Join("; ", balanced.GetEndpoints())})");
        var ejectedAt = Stopwatch.GetTimestamp();
        var servedBefore = hosts[0].Counters.Calls + hosts[1].Counters.Calls;
        await Eventually.That(
            () => hosts[0].Counters.Calls + hosts[1].Counters.Calls > servedBefore + 200,
            "the other two serve on");

        // Restarted on its port: once its ejection is over, a channel opens to it and it takes calls again.
        var restarted = await NetTcpTestHost.StartAsync(_certificate, port);
        _hosts.Add(restarted);
        await Eventually.That(
            () => restarted.Counters.Calls > 20,
            () => $"the restarted instance takes calls again ({string.Join("; ", balanced.GetEndpoints())})");
        await stop.CancelAsync();
        await Task.WhenAll(callers);

        // Calls that went out on a connection the instance reset may fail (a caller's own retry policy decides); none
        // that started after the ejection does, and no more failed than the connections the instance had.
        Assert.That(failures.Where(f => f.StartedAt > ejectedAt).Select(f => f.Error.Message), Is.Empty);
        Assert.That(failures.Count, Is.LessThanOrEqualTo(16 + 9), string.Join(Environment.NewLine, failures.Select(f => f.Error.Message).Distinct()));
    }

    [Test]
    public async Task AnInstance20TimesSlowerThanTheOthers_GetsFarFewerCalls()
    {
        var hosts = await StartHostsAsync(3);
        hosts[2].AddedServiceTime = TimeSpan.FromMilliseconds(95);
        await using var pool = CreatePool(hosts, new BalancingOptions { OutlierInterval = TimeSpan.FromSeconds(1), LatencyMinimumCalls = 5 });
        await pool.WarmUpAsync(readyChannels: 9);

        // Every call takes 5 ms of service time; at the slow instance, 100 ms.
        await Task.WhenAll(Enumerable.Range(0, 16).Select(caller => CallerAsync(pool, caller, calls: 60, serviceMilliseconds: 5)));

        var calls = hosts.Select(h => h.Counters.Calls).ToArray();
        Assert.That(calls.Sum(), Is.EqualTo(16 * 60));
        Assert.That(calls[2], Is.LessThan(Math.Min(calls[0], calls[1]) / 5), $"calls per instance: {string.Join(", ", calls)}");
    }

    [Test]
    public async Task ARollingRestartOfAllThree_UnderLoad_LosesNoCallStartedAfterAnEjection_AndEndsEvenlySpread()
    {
        var hosts = await StartHostsAsync(3);
        var balancing = new BalancingOptions
        {
            ConsecutiveFailures = 2,
            BaseEjectionTime = TimeSpan.FromSeconds(1),
            OutlierInterval = TimeSpan.FromMilliseconds(250),
            LatencyEjectionFactor = 0,
        };
        await using var pool = CreatePool(hosts, balancing);
        await pool.WarmUpAsync(readyChannels: 9);
        var balanced = pool.BalancedPool!;
        using var stop = new CancellationTokenSource();
        var failures = new ConcurrentQueue<(long StartedAt, long EndedAt, Exception Error)>();
        var callers = Enumerable.Range(0, 16).Select(caller => LoopAsync(pool, caller, failures, stop.Token)).ToArray();

        var windows = new List<(long From, long To)>();
        for (var i = 0; i < 3; i++)
        {
            var port = hosts[i].Port;
            var killedAt = Stopwatch.GetTimestamp();
            await hosts[i].StopAsync();
            var index = i;
            await Eventually.That(
                () => balanced.GetEndpoints()[index].State == EndpointState.Ejected,
                () => $"instance {index} is ejected ({string.Join("; ", balanced.GetEndpoints())})");
            windows.Add((killedAt, Stopwatch.GetTimestamp()));
            hosts[i] = await NetTcpTestHost.StartAsync(_certificate, port);
            _hosts.Add(hosts[i]);
            await Eventually.That(
                () => hosts[index].Counters.Calls > 20,
                () => $"instance {index} takes calls again ({string.Join("; ", balanced.GetEndpoints())})");
        }

        var before = hosts.Select(h => h.Counters.Calls).ToArray();
        await Eventually.That(() => hosts.Sum(h => h.Counters.Calls) - before.Sum() > 600, "600 more calls are served");
        await stop.CancelAsync();
        await Task.WhenAll(callers);

        // A failure is a call that went out on a connection the instance reset while it stopped; none started later.
        // Allowed: a call that started before an instance's ejection and was still out when it was killed.
        var late = failures.Where(f => !windows.Any(w => f.StartedAt <= w.To && f.EndedAt >= w.From))
            .Select(f => $"{f.Error.GetType().Name} started {string.Join("/", windows.Select(w => Stopwatch.GetElapsedTime(w.From, f.StartedAt).TotalMilliseconds.ToString("0", System.Globalization.CultureInfo.InvariantCulture)))} ms after the kills (ejected {string.Join("/", windows.Select(w => Stopwatch.GetElapsedTime(w.From, w.To).TotalMilliseconds.ToString("0", System.Globalization.CultureInfo.InvariantCulture)))} ms after them): {f.Error.Message}");
        Assert.That(late, Is.Empty);
        var spread = hosts.Select((h, i) => h.Counters.Calls - before[i]).ToArray();
        var even = spread.Sum() / 3.0;
        Assert.That(spread, Has.All.InRange(even * 0.7, even * 1.3), $"calls per instance after the restarts: {string.Join(", ", spread)}");
    }

    [Test]
    public async Task AHostName_ResolvedToANewAddress_SendsItCalls_AndAVanishedAddressDrains()
    {
        // Two instances on one port at 127.0.0.2 and 127.0.0.3, behind the name a test resolver answers for.
        var first = await NetTcpTestHost.StartAsync(_certificate, listenAddress: IPAddress.Parse("127.0.0.2"));
        _hosts.Add(first);
        var second = await NetTcpTestHost.StartAsync(_certificate, first.Port, listenAddress: IPAddress.Parse("127.0.0.3"));
        _hosts.Add(second);
        IPAddress[] answer = [IPAddress.Parse("127.0.0.2")];
        var balancing = new BalancingOptions
        {
            ResolveHostNames = true,
            ResolveInterval = TimeSpan.FromMilliseconds(300),
            Resolver = (host, _) => Task.FromResult(host == "orders.test" ? Volatile.Read(ref answer) : throw new ArgumentException($"unknown host {host}")),
        };
        await using var pool = new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(),
            [NetTcpTestHost.CreateAddress(new Uri($"net.tcp://orders.test:{first.Port}/echo"))],
            new ChannelPoolOptions { PoolSize = 4 },
            balancing,
            factory => TestCertificate.TrustOnly(factory.Credentials, _certificate));
        await CallerAsync(pool, 0, calls: 10);
        Assert.That((first.Counters.Calls, second.Counters.Calls), Is.EqualTo((10L, 0L)));

        Volatile.Write(ref answer, [IPAddress.Parse("127.0.0.3")]);
        await Eventually.That(
            () => pool.BalancedPool!.GetEndpoints().Any(e => e.Address.Uri.Host == "127.0.0.3"),
            "the new address joins within the resolve interval");
        await Eventually.That(
            () => pool.BalancedPool!.GetEndpoints().All(e => e.Address.Uri.Host == "127.0.0.3"),
            () => $"the vanished one drains and leaves ({string.Join("; ", pool.BalancedPool!.GetEndpoints())})");
        var firstCalls = first.Counters.Calls;
        await CallerAsync(pool, 1, calls: 10);

        Assert.That(first.Counters.Calls, Is.EqualTo(firstCalls), "no call goes to the vanished address");
        Assert.That(second.Counters.Calls, Is.EqualTo(10));
    }

    [Test]
    public void AnEmptyAddressList_IsRefused_NamingTheParameter()
    {
        var error = Assert.Throws<ArgumentException>(() => new ServiceChannelPool<IEchoService>(NetTcpTestHost.CreateBinding(), Array.Empty<EndpointAddress>()));
        Assert.That(error!.ParamName, Is.EqualTo("addresses"));
        Assert.That(error.Message, Does.Contain("address list is empty"));
    }

    [Test]
    public void ARepeatedAddress_IsRefused_NamingIt()
    {
        var address = NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9001/echo"));
        var error = Assert.Throws<ArgumentException>(() => new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(), [address, NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9002/echo")), address]));
        Assert.That(error!.Message, Does.Contain("'net.tcp://127.0.0.1:9001/echo' twice"));
    }

    [Test]
    public void AnAddressOfAnotherScheme_IsRefused_NamingTheScheme()
    {
        var error = Assert.Throws<ArgumentException>(() => new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(),
            [NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9001/echo")), new EndpointAddress("https://127.0.0.1:9002/echo")]));
        Assert.That(error!.Message, Does.Contain("https"));
    }

    [Test]
    public void ANullAddress_IsRefused_SayingWhichOne()
    {
        var error = Assert.Throws<ArgumentException>(() => new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(), [NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9001/echo")), null!]));
        Assert.That(error!.Message, Does.Contain("Address 1 of the list is null"));
    }

    [Test]
    public void AnEjectionShareAbove100Percent_IsRefused_NamingTheOption()
    {
        var error = Assert.Throws<Microsoft.Extensions.Options.OptionsValidationException>(() => new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(),
            [NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9001/echo")), NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9002/echo"))],
            balancing: new BalancingOptions { MaxEjectionPercent = 120 }));
        Assert.That(error!.Message, Does.Contain("BalancingOptions.MaxEjectionPercent must be between 0 and 100"));
    }

    [Test]
    public void OnASeveralAddressEndpoint_TheSinglePoolAccessors_SayWhatToUseInstead()
    {
        using var pool = new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(),
            [NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9001/echo")), NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9002/echo"))]);
        var error = Assert.Throws<InvalidOperationException>(() => _ = pool.DefaultPool);
        Assert.That(error!.Message, Does.Contain("balances over 2 addresses").And.Contain("GetChannelPool or BalancedPool"));
        Assert.That(pool.GetChannelPool(null), Is.SameAs(pool.BalancedPool));
    }

    private async Task<NetTcpTestHost[]> StartHostsAsync(int count)
    {
        var hosts = new NetTcpTestHost[count];
        for (var i = 0; i < count; i++)
        {
            hosts[i] = await NetTcpTestHost.StartAsync(_certificate);
            _hosts.Add(hosts[i]);
        }

        return hosts;
    }

    private ServiceChannelPool<IEchoService> CreatePool(NetTcpTestHost[] hosts, BalancingOptions balancing) => new(
        NetTcpTestHost.CreateBinding(),
        hosts.Select(h => NetTcpTestHost.CreateAddress(h.EchoAddress)),
        new ChannelPoolOptions { Name = "echo", PoolSize = 12, Resilience = { Retry = { MaxRetryAttempts = 0 } } },
        balancing,
        factory => TestCertificate.TrustOnly(factory.Credentials, _certificate));

    /// <summary>A caller as the docs show one: a proxy per call, closed after it, no try/finally.</summary>
    private static async Task CallerAsync(ServiceChannelPool<IEchoService> pool, int caller, int calls, int serviceMilliseconds = 2)
    {
        for (var i = 0; i < calls; i++)
        {
            var proxy = new EchoProxy(pool);
            Assert.That(await proxy.EchoAfterAsync($"{caller}/{i}", serviceMilliseconds), Is.EqualTo($"{caller}/{i}"));
            proxy.Close();
        }
    }

    private static async Task LoopAsync(ServiceChannelPool<IEchoService> pool, int caller, ConcurrentQueue<(long, long, Exception)> failures, CancellationToken stop)
    {
        for (var i = 0; !stop.IsCancellationRequested; i++)
        {
            var startedAt = Stopwatch.GetTimestamp();
            var proxy = new EchoProxy(pool);
            try
            {
                await proxy.EchoAfterAsync($"{caller}/{i}", 2);
                proxy.Close();
            }
            catch (CommunicationException ex)
            {
                failures.Enqueue((startedAt, Stopwatch.GetTimestamp(), ex));
                proxy.Abort();
            }
            catch (TimeoutException ex)
            {
                failures.Enqueue((startedAt, Stopwatch.GetTimestamp(), ex));
                proxy.Abort();
            }
        }
    }
}
