using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;

namespace ChannelPool.Tests.Eviction;

/// <summary>
/// The idle timeout: after a burst, channels idle longer than <see cref="ChannelPoolOptions.IdleTimeout"/> close, down to
/// the pool size, while lifetime, jitter and the idle order work as before. The pool clock ticks every second here, and a
/// channel's idle time is read from it, so the tests leave a tick of slack around each boundary.
/// </summary>
public class IdleTimeoutTests : PoolTestBase
{
    private ServiceProvider _services = null!;
    private MetricCollector<long> _evictions = null!;

    [SetUp]
    public void Listen()
    {
        _services = new ServiceCollection().AddMetrics().BuildServiceProvider();
        _evictions = new MetricCollector<long>(_services.GetRequiredService<IMeterFactory>(), ChannelPoolTelemetry.MeterName, "channelpool.channel.evictions");
    }

    [TearDown]
    public void StopListening()
    {
        _evictions.Dispose();
        _services.Dispose();
    }

    [Test]
    public async Task AfterABurst_ChannelsIdleLongerThanTheTimeout_CloseDownToThePoolSize_LeastRecentlyUsedFirst()
    {
        var pool = Pool(o =>
        {
            o.IdleTimeout = TimeSpan.FromSeconds(30);
            o.CleanupInterval = TimeSpan.FromSeconds(10);
        });
        await pool.WarmUpAsync().Within();
        var burst = await Burst(pool, 6);
        await UntilQuiet(pool);
        var late = burst.TakeLast(2).Select(l => l.Channel).ToList();
        foreach (var lease in burst.SkipLast(2))
        {
            lease.Dispose();
        }

        Time.Advance(TimeSpan.FromSeconds(20));
        burst.TakeLast(2).ToList().ForEach(l => l.Dispose());
        Assert.That(pool.GetSnapshot().Idle, Is.EqualTo(8), "the burst left eight channels idle");

        Time.Advance(TimeSpan.FromSeconds(25));

        await Eventually.That(() => Factory.Channels.Count(c => c.IsClosed) == 6, () => $"six channels idle since 0 s closed by 45 s ({pool.GetSnapshot()})");
        Assert.That(late, Has.All.Matches<FakeChannel>(c => c.IsOpen), "the two used last stay: the pool keeps its size");
        Assert.That(Evicted("idle_timeout"), Is.EqualTo(6));
        Time.Advance(TimeSpan.FromSeconds(40));
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot() is { Idle: 2, Opening: 0 }, Is.True, $"nothing closes below the pool size, and nothing reopens: {pool.GetSnapshot()}");
        Assert.That(Factory.Opened, Is.EqualTo(8));
    }

    [Test]
    public async Task TheIdleTimeout_AndTheLifetime_EachRetireTheirOwn()
    {
        var pool = Pool(o =>
        {
            o.ChannelLifetime = TimeSpan.FromSeconds(60);
            o.IdleTimeout = TimeSpan.FromSeconds(40);
            o.CleanupInterval = TimeSpan.FromSeconds(5);
        });
        await pool.WarmUpAsync().Within();
        var opened0 = Factory.Channels.ToList();
        Time.Advance(TimeSpan.FromSeconds(30));
        var burst = await Burst(pool, 4);
        await UntilQuiet(pool);
        burst.ForEach(l => l.Dispose());
        Assert.That(pool.GetSnapshot().Idle, Is.EqualTo(6));

        // Deadlines are spread over the lifetime (ExpiryTests), so the lifetime closes channels at its own pace.
        Time.Advance(TimeSpan.FromSeconds(35));
        await UntilQuiet(pool);
        Assert.That(opened0, Has.All.Matches<FakeChannel>(c => c.IsClosed), "the two opened at 0 s reached their lifetime by 60 s, idle or not");
        Assert.That(Evicted("idle_timeout"), Is.Zero, "at 65 s no channel has idled 40 s");

        for (var second = 65; second < 95; second += 5)
        {
            Time.Advance(TimeSpan.FromSeconds(5));
            await UntilQuiet(pool);
        }

        Assert.That(pool.GetSnapshot().Idle, Is.EqualTo(2), "at 95 s the burst's surplus is gone, down to the pool size");
        Assert.That(Evicted("lifetime") + Evicted("idle_timeout"), Is.EqualTo(Factory.Channels.Count(c => c.IsClosed)), "each closed by the lifetime or the idle timeout");
    }

    [Test]
    public async Task AnInfiniteIdleTimeout_KeepsBurstChannelsToTheEndOfTheirLifetime()
    {
        var pool = Pool(o =>
        {
            o.IdleTimeout = Timeout.InfiniteTimeSpan;
            o.CleanupInterval = TimeSpan.FromSeconds(10);
        });
        await pool.WarmUpAsync().Within();
        var burst = await Burst(pool, 6);
        await UntilQuiet(pool);
        burst.ForEach(l => l.Dispose());

        Time.Advance(TimeSpan.FromSeconds(200));
        await UntilQuiet(pool);

        Assert.That(Evicted("idle_timeout"), Is.Zero);
        Assert.That(Factory.Channels.Count(c => c.IsClosed), Is.EqualTo(Evicted("lifetime")), "only their lifetime ended any");
    }

    [Test]
    public async Task Reconfigure_ChangesTheIdleTimeout_OfTheRunningPool()
    {
        var pool = Pool(o => o.IdleTimeout = Timeout.InfiniteTimeSpan);
        await pool.WarmUpAsync().Within();
        var burst = await Burst(pool, 6);
        await UntilQuiet(pool);
        burst.ForEach(l => l.Dispose());

        var options = SmallPool(poolSize: 2);
        options.ChannelLifetime = TimeSpan.FromHours(1);
        options.IdleTimeout = TimeSpan.FromSeconds(10);
        pool.Reconfigure(options);
        Time.Advance(TimeSpan.FromSeconds(25));

        await Eventually.That(() => pool.GetSnapshot().Idle == 2, () => $"the new idle timeout closed the surplus ({pool.GetSnapshot()})");
        Assert.That(Evicted("idle_timeout"), Is.EqualTo(6));
    }

    private DefaultChannelPool<FakeChannel> Pool(Action<ChannelPoolOptions> configure)
    {
        // A burst's channels take slots spread over the lifetime, the first within a few seconds of now: an hour keeps
        // every deadline beyond these tests' minutes, so only the idle timeout closes what they count.
        var options = SmallPool(poolSize: 2);
        options.ChannelLifetime = TimeSpan.FromHours(1);
        configure(options);
        return CreatePool(options, meterFactory: _services.GetRequiredService<IMeterFactory>());
    }

    private static async Task<List<ChannelLease<FakeChannel>>> Burst(DefaultChannelPool<FakeChannel> pool, int callers)
    {
        var leases = new List<ChannelLease<FakeChannel>>();
        for (var i = 0; i < callers; i++)
        {
            leases.Add(await pool.AcquireAsync().Within());
        }

        return leases;
    }

    private long Evicted(string reason) => _evictions.GetMeasurementSnapshot()
        .Where(m => Equals(m.Tags[ChannelPoolTelemetry.EvictionReasonTag], reason))
        .Sum(m => m.Value);
}
