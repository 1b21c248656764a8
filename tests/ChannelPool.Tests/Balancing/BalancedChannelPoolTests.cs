using System.Net;
using Microsoft.Extensions.Options;

namespace ChannelPool.Tests.Balancing;

/// <summary>
/// The balanced pool's decisions on fake channels and a fake clock: where leases go, when an address is ejected and let
/// back in, how a lease fails over, and how resolution changes the address list.
/// </summary>
public sealed class BalancedChannelPoolTests
{
    private static readonly Uri[] Three = [new("net.tcp://10.0.0.1:9000/s"), new("net.tcp://10.0.0.2:9000/s"), new("net.tcp://10.0.0.3:9000/s")];

    private readonly List<BalancedChannelPool<FakeChannel>> _pools = [];
    private FakeTimeProvider _time = null!;
    private Dictionary<Uri, FakeChannelFactory> _factories = null!;

    [SetUp]
    public void CreateFakes()
    {
        _time = new FakeTimeProvider();
        _factories = [];
    }

    [TearDown]
    public async Task DrainPools()
    {
        foreach (var factory in _factories.Values)
        {
            factory.StopHoldingOpens();
        }

        foreach (var pool in _pools)
        {
            // Drain waits (in fake time) for leases a test left out; move the clock so it can finish.
            var drain = pool.DisposeAsync().AsTask();
            while (!drain.IsCompleted)
            {
                _time.Advance(TimeSpan.FromSeconds(1));
                await Task.WhenAny(drain, Task.Delay(1));
            }

            await drain;
        }

        _pools.Clear();
    }

    [Test]
    public async Task PowerOfTwoChoices_SpreadsConcurrentLeasesEvenlyOverTheAddresses()
    {
        var pool = Create(Three, poolSize: 30, maxChannels: 60);
        await pool.WarmUpAsync(30);

        var leases = new List<ChannelLease<FakeChannel>>();
        for (var i = 0; i < 30; i++)
        {
            leases.Add(await pool.AcquireAsync());
        }

        // Each lease goes to the less busy of two: the spread stays within a lease or two of even, never drifting.
        var inFlight = pool.GetEndpoints().Select(e => e.InFlight).ToArray();
        Assert.That(inFlight, Has.All.InRange(8, 12), string.Join(", ", inFlight));
        leases.ForEach(lease => lease.Release());
        Assert.That(pool.GetEndpoints().Select(e => e.InFlight), Has.All.EqualTo(0));
    }

    [Test]
    public async Task RoundRobin_LeasesFromEachAddressInTurn()
    {
        var pool = Create(Three, balancing: new BalancingOptions { Policy = BalancingPolicy.RoundRobin });
        await pool.WarmUpAsync(pool.PoolSize);

        for (var i = 0; i < 30; i++)
        {
            (await pool.AcquireAsync()).Release();
        }

        Assert.That(pool.GetEndpoints().Select(e => e.Calls), Is.EqualTo(new long[] { 10, 10, 10 }));
    }

    [Test]
    public async Task AnAddressWhoseOpensFail_IsEjected_AndLeasesNeverGoThere()
    {
        _factories[Three[1]] = new FakeChannelFactory { OpenFailure = () => new IOException("connection refused") };
        var pool = Create(Three, balancing: new BalancingOptions { ConsecutiveFailures = 2 });

        await Eventually.That(
            () => State(pool, 1) == EndpointState.Ejected,
            () => $"the failing address is ejected ({Describe(pool)})");
        await pool.WarmUpAsync(2);
        for (var i = 0; i < 40; i++)
        {
            (await pool.AcquireAsync()).Release();
        }

        Assert.That(pool.GetEndpoints()[1].Calls, Is.Zero);
        Assert.That(pool.GetEndpoints()[0].Calls + pool.GetEndpoints()[2].Calls, Is.EqualTo(40));
    }

    [Test]
    public async Task ACallerWaitingAtAnAddressThatCannotOpen_GetsAChannelFromAnotherAddress()
    {
        // Two addresses, no channel open yet; the first cannot open, so whoever waits there must be sent on.
        Uri[] two = [Three[0], Three[1]];
        _factories[two[0]] = new FakeChannelFactory { OpenFailure = () => new IOException("connection refused") };
        var pool = Create(two, balancing: new BalancingOptions { Policy = BalancingPolicy.RoundRobin, ConsecutiveFailures = 2 });

        var leases = await Task.WhenAll(Enumerable.Range(0, 6).Select(_ => pool.AcquireAsync().AsTask()));

        Assert.That(leases.Select(l => l.Channel.Id), Is.Unique);
        Assert.That(pool.GetEndpoints()[1].InFlight, Is.EqualTo(6));
        Assert.That(State(pool, 0), Is.EqualTo(EndpointState.Ejected));
    }

    [Test]
    public async Task CallsThatBreakTheirChannelsInARow_EjectTheAddress_ForTheBaseTime_ThenItIsProbedBackIn()
    {
        var pool = Create(Three, balancing: new BalancingOptions { ConsecutiveFailures = 3, BaseEjectionTime = TimeSpan.FromSeconds(30), OutlierInterval = TimeSpan.FromSeconds(5) });
        await pool.WarmUpAsync(pool.PoolSize);

        await BreakCallsAt(pool, address: 2, count: 3);
        Assert.That(State(pool, 2), Is.EqualTo(EndpointState.Ejected));
        Assert.That(pool.GetEndpoints()[2].EjectedFor, Is.EqualTo(TimeSpan.FromSeconds(30)));

        _time.Advance(TimeSpan.FromSeconds(25));
        Assert.That(State(pool, 2), Is.EqualTo(EndpointState.Ejected));
        _time.Advance(TimeSpan.FromSeconds(5));

        // The ejection is over: the address opens a channel in the background and takes leases again.
        await Eventually.That(() => State(pool, 2) == EndpointState.Active, () => $"the address is back ({Describe(pool)})");
    }

    [Test]
    public async Task EachFurtherEjection_LastsLonger_UpToTheMaximum()
    {
        var pool = Create(Three, balancing: new BalancingOptions
        {
            ConsecutiveFailures = 2,
            BaseEjectionTime = TimeSpan.FromSeconds(10),
            MaxEjectionTime = TimeSpan.FromSeconds(25),
            OutlierInterval = TimeSpan.FromSeconds(10),
            LatencyEjectionFactor = 0,
        });
        await pool.WarmUpAsync(pool.PoolSize);

        var durations = new List<TimeSpan?>();
        for (var round = 0; round < 3; round++)
        {
            await BreakCallsAt(pool, address: 0, count: 2);
            durations.Add(pool.GetEndpoints()[0].EjectedFor);
            _time.Advance(durations[^1]!.Value);
            await Eventually.That(() => State(pool, 0) == EndpointState.Active, () => $"the address is back ({Describe(pool)})");
        }

        Assert.That(durations, Is.EqualTo(new TimeSpan?[] { TimeSpan.FromSeconds(10), TimeSpan.FromSeconds(20), TimeSpan.FromSeconds(25) }));
    }

    [Test]
    public async Task AnAddressBackAndHealthy_IsForgivenOneEjectionAnInterval_ButNotByATickThatFindsItJustBack()
    {
        var pool = Create(Three, balancing: new BalancingOptions
        {
            ConsecutiveFailures = 2,
            BaseEjectionTime = TimeSpan.FromSeconds(10),
            OutlierInterval = TimeSpan.FromSeconds(10),
            LatencyEjectionFactor = 0,
        });
        await pool.WarmUpAsync(pool.PoolSize);
        await BreakCallsAt(pool, address: 0, count: 2);
        await Eventually.That(() => pool.GetEndpoints()[0].Pool.Idle > 0, () => $"the ejected address has a channel ready ({Describe(pool)})");

        // Two checks fall due in one step of the clock, as when a timer tick runs late: the first lets the address back in
        // (a channel is ready), the second finds it back but not yet tried, and forgives nothing.
        _time.Advance(TimeSpan.FromSeconds(20));
        Assert.That(State(pool, 0), Is.EqualTo(EndpointState.Active));
        Assert.That(pool.GetEndpoints()[0].Ejections, Is.EqualTo(1));

        // A whole interval back with no failure: one ejection is forgiven.
        _time.Advance(TimeSpan.FromSeconds(10));
        Assert.That(pool.GetEndpoints()[0].Ejections, Is.Zero);
    }

    [Test]
    public async Task NoMoreThanMaxEjectionPercentOfTheAddresses_AreOutAtOnce()
    {
        var pool = Create(Three, balancing: new BalancingOptions { ConsecutiveFailures = 2, MaxEjectionPercent = 50 });
        await pool.WarmUpAsync(pool.PoolSize);

        await BreakCallsAt(pool, address: 0, count: 2);
        await BreakCallsAt(pool, address: 1, count: 2);

        Assert.That(pool.GetEndpoints().Select(e => e.State), Is.EqualTo(new[] { EndpointState.Ejected, EndpointState.Active, EndpointState.Active }));
    }

    [Test]
    public async Task AnAddressFarSlowerThanTheOthers_IsEjectedAtTheOutlierCheck()
    {
        var pool = Create(Three, balancing: new BalancingOptions
        {
            Policy = BalancingPolicy.RoundRobin,
            LatencyEjectionFactor = 5,
            LatencyMinimumCalls = 10,
            OutlierInterval = TimeSpan.FromSeconds(60),
        });
        await pool.WarmUpAsync(pool.PoolSize);

        // Round robin: every third lease goes to the third address, which holds each one 20 times longer.
        for (var i = 0; i < 30; i++)
        {
            var lease = await pool.AcquireAsync();
            _time.Advance(TimeSpan.FromMilliseconds(i % 3 == 2 ? 200 : 10));
            lease.Release();
        }

        Assert.That(State(pool, 2), Is.EqualTo(EndpointState.Active));
        _time.Advance(TimeSpan.FromSeconds(60) - TimeSpan.FromMilliseconds(30 * 10 + 10 * 190));

        Assert.That(pool.GetEndpoints().Select(e => e.State), Is.EqualTo(new[] { EndpointState.Active, EndpointState.Active, EndpointState.Ejected }));
    }

    [Test]
    public async Task AServiceFaultIsNotAFailure_OnlyAChannelTheCallBrokeIs()
    {
        var pool = Create(Three, balancing: new BalancingOptions { ConsecutiveFailures = 2, Policy = BalancingPolicy.RoundRobin });
        await pool.WarmUpAsync(pool.PoolSize);

        // A fault answered by the service leaves its channel usable, so the adapter releases it unbroken.
        for (var i = 0; i < 12; i++)
        {
            (await pool.AcquireAsync()).Release();
        }

        Assert.That(pool.GetEndpoints().Select(e => e.Failures), Has.All.Zero);
        Assert.That(pool.GetEndpoints().Select(e => e.State), Has.All.EqualTo(EndpointState.Active));
    }

    [Test]
    public async Task Resolution_AddsAnAddressThatAppears_AndDrainsOneThatVanishes()
    {
        var answers = new[] { IPAddress.Parse("10.1.0.1"), IPAddress.Parse("10.1.0.2") };
        var pool = Create(
            [new Uri("net.tcp://orders.test:9000/s")],
            balancing: new BalancingOptions
            {
                ResolveHostNames = true,
                ResolveInterval = TimeSpan.FromSeconds(30),
                Resolver = (host, _) => Task.FromResult(host == "orders.test" ? Volatile.Read(ref answers) : []),
            });

        Assert.That(pool.GetEndpoints().Select(e => e.Address.Uri.Host), Is.EquivalentTo(new[] { "10.1.0.1", "10.1.0.2" }));
        Assert.That(pool.GetEndpoints().Select(e => e.Address.HostName), Has.All.EqualTo("orders.test"));
        // A lease held at the address that will vanish keeps it draining (not gone) while the test looks.
        var kept = await LeaseAt(pool, "10.1.0.1");

        Volatile.Write(ref answers, [IPAddress.Parse("10.1.0.2"), IPAddress.Parse("10.1.0.3")]);
        _time.Advance(TimeSpan.FromSeconds(30));

        await Eventually.That(
            () => pool.GetEndpoints().Any(e => e.Address.Uri.Host == "10.1.0.3" && e.State == EndpointState.Active),
            () => $"the new address joined ({Describe(pool)})");
        Assert.That(pool.GetEndpoints().Where(e => e.Address.Uri.Host == "10.1.0.1").Select(e => e.State), Has.All.EqualTo(EndpointState.Draining));
        var drainingCalls = pool.GetEndpoints().Single(e => e.Address.Uri.Host == "10.1.0.1").Calls;
        for (var i = 0; i < 20; i++)
        {
            (await pool.AcquireAsync()).Release();
        }

        Assert.That(pool.GetEndpoints().Single(e => e.Address.Uri.Host == "10.1.0.1").Calls, Is.EqualTo(drainingCalls), "no lease goes to a draining address");

        Assert.That(pool.GetEndpoints().Single(e => e.Address.Uri.Host == "10.1.0.3").Calls, Is.GreaterThan(0));
        kept.Release();
        await Eventually.That(
            () => pool.GetEndpoints().All(e => e.Address.Uri.Host != "10.1.0.1"),
            () => $"the vanished address left once its lease came back ({Describe(pool)})");
    }

    [Test]
    public void EveryAddressEjected_StillServes_FromTheLeastBusy()
    {
        Uri[] one = [Three[0]];
        var pool = Create(one, balancing: new BalancingOptions { ConsecutiveFailures = 1 });

        // One address is never ejected: there is nowhere else to go.
        Assert.That(pool.Acquire().IsActive, Is.True);
    }

    [Test]
    public void AnEmptyAddressList_IsRefused_NamingWhatIsMissing()
    {
        var error = Assert.Throws<ArgumentException>(() => Create([]));
        Assert.That(error!.Message, Does.Contain("address list is empty"));
        Assert.That(error.ParamName, Is.EqualTo("addresses"));
    }

    [Test]
    public void ARepeatedAddress_IsRefused_NamingIt()
    {
        var error = Assert.Throws<ArgumentException>(() => Create([Three[0], Three[1], new Uri("net.tcp://10.0.0.1:9000/s")]));
        Assert.That(error!.Message, Does.Contain("'net.tcp://10.0.0.1:9000/s' twice"));
    }

    [Test]
    public void AddressesOfMixedSchemes_AreRefused_NamingBoth()
    {
        var error = Assert.Throws<ArgumentException>(() => Create([Three[0], new Uri("https://10.0.0.2/s")]));
        Assert.That(error!.Message, Does.Contain("mixes schemes").And.Contain("net.tcp").And.Contain("https"));
    }

    [Test]
    public void ARelativeAddress_IsRefused()
    {
        var error = Assert.Throws<ArgumentException>(() => Create([Three[0], new Uri("/s", UriKind.Relative)]));
        Assert.That(error!.Message, Does.Contain("not absolute"));
    }

    [TestCase(nameof(BalancingOptions.MaxEjectionPercent), 150, "between 0 and 100")]
    [TestCase(nameof(BalancingOptions.MaxEjectionPercent), -1, "between 0 and 100")]
    [TestCase(nameof(BalancingOptions.ConsecutiveFailures), 0, "at least 1")]
    [TestCase(nameof(BalancingOptions.LatencyEjectionFactor), 0.5, "0 (off) or above 1")]
    [TestCase(nameof(BalancingOptions.LatencyMinimumCalls), 0, "at least 1")]
    public void AnOutOfRangeBalancingOption_IsRefused_NamingTheOption(string option, double value, string rule)
    {
        var balancing = new BalancingOptions();
        var property = typeof(BalancingOptions).GetProperty(option)!;
        property.SetValue(balancing, Convert.ChangeType(value, property.PropertyType, System.Globalization.CultureInfo.InvariantCulture));

        var error = Assert.Throws<OptionsValidationException>(() => Create(Three, balancing: balancing));
        Assert.That(error!.Message, Does.Contain($"BalancingOptions.{option} must be {rule}"));
    }

    [Test]
    public void AnEjectionTimeBelowTheBase_IsRefused_NamingBoth()
    {
        var error = Assert.Throws<OptionsValidationException>(() => Create(Three, balancing: new BalancingOptions
        {
            BaseEjectionTime = TimeSpan.FromMinutes(1),
            MaxEjectionTime = TimeSpan.FromSeconds(10),
        }));
        Assert.That(error!.Message, Does.Contain("MaxEjectionTime must be at least BaseEjectionTime"));
    }

    [Test]
    public async Task EachAddressPool_GetsItsShareOfTheSizes_AndIsNamedForItsAddress()
    {
        var pool = Create(Three, poolSize: 10, maxChannels: 20);
        await pool.WarmUpAsync(10);

        var endpoints = pool.GetEndpoints();
        Assert.That(endpoints.Select(e => e.PoolName), Is.EqualTo(new[] { "orders@10.0.0.1:9000", "orders@10.0.0.2:9000", "orders@10.0.0.3:9000" }));
        Assert.That(endpoints.Select(e => e.Pool.Idle), Has.All.EqualTo(4));
        Assert.That(pool.GetSnapshot().Idle, Is.EqualTo(12));
    }

    private static async Task BreakCallsAt(BalancedChannelPool<FakeChannel> pool, int address, int count)
    {
        var target = pool.GetEndpoints()[address].Address;
        var broken = 0;
        for (var tries = 0; broken < count && tries < 1000; tries++)
        {
            var lease = await pool.AcquireAsync();
            if (pool.GetEndpoints().Single(e => e.InFlight == 1).Address.Equals(target))
            {
                lease.MarkBroken(new IOException("connection reset"));
                broken++;
            }

            lease.Release();
        }

        Assert.That(broken, Is.EqualTo(count), $"leases at address {address}");
    }

    private static async Task<ChannelLease<FakeChannel>> LeaseAt(BalancedChannelPool<FakeChannel> pool, string host)
    {
        for (var tries = 0; tries < 1000; tries++)
        {
            var lease = await pool.AcquireAsync();
            if (pool.GetEndpoints().Single(e => e.Address.Uri.Host == host).InFlight == 1)
            {
                return lease;
            }

            lease.Release();
        }

        throw new InvalidOperationException($"no lease went to {host} in 1,000 tries ({Describe(pool)})");
    }

    private static EndpointState State(BalancedChannelPool<FakeChannel> pool, int address) => pool.GetEndpoints()[address].State;

    private static string Describe(BalancedChannelPool<FakeChannel> pool) => string.Join("; ", pool.GetEndpoints());

    private BalancedChannelPool<FakeChannel> Create(Uri[] addresses, int poolSize = 6, int maxChannels = 12, BalancingOptions? balancing = null)
    {
        var options = new ChannelPoolOptions
        {
            Name = "orders",
            PoolSize = poolSize,
            MaxChannels = maxChannels,
            LifetimeJitter = 0,
            Resilience = { Retry = { MaxRetryAttempts = 0 } },
        };
        var pool = new BalancedChannelPool<FakeChannel>(
            addresses,
            address => _factories.TryGetValue(address.Uri, out var factory) ? factory : _factories[address.Uri] = new FakeChannelFactory(),
            options,
            balancing,
            _time);
        _pools.Add(pool);
        return pool;
    }
}
