using System.Diagnostics.Metrics;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace ChannelPool.Tests.LeakDetection;

/// <summary>
/// Leak detection: a lease held past <see cref="ChannelPoolOptions.LeakDetectionThreshold"/> is logged once, naming the
/// pool and carrying the stack that acquired it, counted, and logged once more if it comes back.
/// </summary>
public class LeakDetectionTests : PoolTestBase
{
    private FakeLogCollector _logs = null!;
    private LoggerFactory _loggers = null!;
    private ServiceProvider _services = null!;
    private MetricCollector<long> _leaks = null!;

    [SetUp]
    public void Listen()
    {
        _logs = new FakeLogCollector();
        _loggers = new LoggerFactory([new FakeLoggerProvider(_logs)]);
        _services = new ServiceCollection().AddMetrics().BuildServiceProvider();
        _leaks = new MetricCollector<long>(_services.GetRequiredService<IMeterFactory>(), ChannelPoolTelemetry.MeterName, "channelpool.channel.leaks");
    }

    [TearDown]
    public void StopListening()
    {
        _leaks.Dispose();
        _services.Dispose();
        _loggers.Dispose();
    }

    [Test]
    public async Task ALeaseHeldPastTheThreshold_IsLoggedOnce_WithTheStackThatAcquiredIt_AndCounted()
    {
        var pool = Pool();
        await pool.WarmUpAsync().Within();
        var leaked = await AcquireAndForgetAsync(pool);

        Time.Advance(TimeSpan.FromSeconds(8));
        Assert.That(Warnings(), Is.Empty, "not yet past the threshold");
        Time.Advance(TimeSpan.FromSeconds(5));
        Time.Advance(TimeSpan.FromSeconds(30));

        var warning = Warnings().Single();
        Assert.That(warning.Message, Does.Contain($"pool '{pool.Name}'").And.Contain($"channel {leaked.ChannelId}").And.Contain("longer than LeakDetectionThreshold (00:00:10)"));
        Assert.That(warning.Message, Does.Contain(nameof(AcquireAndForgetAsync)), "the stack names the code that acquired the lease");
        Assert.That(warning.Message, Does.Not.Contain("DefaultChannelPool`1.BeginLease"), "and starts at the application's code, not the pool's");
        Assert.That(_leaks.GetMeasurementSnapshot().Sum(m => m.Value), Is.EqualTo(1));
        Assert.That(_leaks.LastMeasurement!.Tags[ChannelPoolTelemetry.PoolNameTag], Is.EqualTo(pool.Name));
        leaked.Dispose();
    }

    [Test]
    public async Task ALeakedLease_ThatComesBack_IsLoggedOnceMore()
    {
        var pool = Pool();
        await pool.WarmUpAsync().Within();
        var leaked = await AcquireAndForgetAsync(pool);
        Time.Advance(TimeSpan.FromSeconds(15));
        Assert.That(Warnings(), Has.Count.EqualTo(1));

        leaked.Dispose();
        leaked.Dispose();

        var returned = _logs.GetSnapshot().Where(r => r.Message.Contains("reported as leaked came back", StringComparison.Ordinal)).ToList();
        Assert.That(returned, Has.Count.EqualTo(1), "one line when it comes back, however often it is released");
        Assert.That(returned[0].Message, Does.Contain($"pool '{pool.Name}'").And.Contain("after 00:00:15"));
        Time.Advance(TimeSpan.FromSeconds(30));
        Assert.That(Warnings(), Has.Count.EqualTo(1), "a returned lease is not reported again");
    }

    [Test]
    public async Task ALeaseReturnedInTime_IsNeverReported()
    {
        var pool = Pool();
        await pool.WarmUpAsync().Within();

        for (var i = 0; i < 5; i++)
        {
            await using var lease = await pool.AcquireAsync();
            Time.Advance(TimeSpan.FromSeconds(9));
        }

        Time.Advance(TimeSpan.FromSeconds(30));
        Assert.That(Warnings(), Is.Empty);
        Assert.That(_logs.GetSnapshot().Any(r => r.Message.Contains("came back", StringComparison.Ordinal)), Is.False);
    }

    [Test]
    public async Task ACallerThatWaited_IsTheOneTheLeakNames_NotTheThreadThatHandedItTheChannel()
    {
        var pool = Pool(o =>
        {
            o.PoolSize = 1;
            o.MaxChannels = 1;
        });
        await pool.WarmUpAsync().Within();
        var first = await pool.AcquireAsync();
        var waiting = WaitAndForgetAsync(pool);

        await Eventually.That(() => pool.GetSnapshot().Waiting == 1, "the second caller waits");
        ReleaseFromElsewhere(first);
        var leaked = await waiting.Within();
        Time.Advance(TimeSpan.FromSeconds(15));

        var warning = Warnings().Single();
        Assert.That(warning.Message, Does.Contain(nameof(WaitAndForgetAsync)));
        Assert.That(warning.Message, Does.Not.Contain(nameof(ReleaseFromElsewhere)));
        leaked.Dispose();
    }

    [Test]
    public async Task WithDetectionOff_LeasingAllocatesNothing_AndWithItOnItCapturesTheStack()
    {
        var off = Pool(o => o.LeakDetectionThreshold = null);
        var on = Pool();
        await off.WarmUpAsync().Within();
        await on.WarmUpAsync().Within();

        Assert.That(AllocatedPerLease(off), Is.Zero, "no stack, no watch: detection off costs nothing");
        Assert.That(AllocatedPerLease(on), Is.GreaterThan(0), "detection on captures the acquiring stack");
    }

    [Test]
    public async Task Reconfigure_TurnsDetectionOn_ForLeasesThatBeginAfterIt()
    {
        var pool = Pool(o => o.LeakDetectionThreshold = null);
        await pool.WarmUpAsync().Within();
        var before = await pool.AcquireAsync();

        var options = SmallPool();
        options.LeakDetectionThreshold = TimeSpan.FromSeconds(10);
        pool.Reconfigure(options);
        var after = await AcquireAndForgetAsync(pool);
        Time.Advance(TimeSpan.FromSeconds(15));

        Assert.That(Warnings().Single().Message, Does.Contain($"channel {after.ChannelId}"), "only the lease begun after the reload was watched");
        before.Dispose();
        after.Dispose();
    }

    private DefaultChannelPool<FakeChannel> Pool(Action<ChannelPoolOptions>? configure = null)
    {
        var options = SmallPool();
        options.LeakDetectionThreshold = TimeSpan.FromSeconds(10);
        configure?.Invoke(options);
        return CreatePool(Factory, options, meterFactory: _services.GetRequiredService<IMeterFactory>(), loggerFactory: _loggers);
    }

    private List<FakeLogRecord> Warnings() => _logs.GetSnapshot().Where(r => r.Level == LogLevel.Warning).ToList();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<ChannelLease<FakeChannel>> AcquireAndForgetAsync(DefaultChannelPool<FakeChannel> pool) => await pool.AcquireAsync();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<ChannelLease<FakeChannel>> WaitAndForgetAsync(DefaultChannelPool<FakeChannel> pool) => await pool.AcquireAsync();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ReleaseFromElsewhere(ChannelLease<FakeChannel> lease) => lease.Dispose();

    private static long AllocatedPerLease(DefaultChannelPool<FakeChannel> pool)
    {
        // Warm first, so the JIT's own allocations (tiering, first calls) are not counted.
        for (var i = 0; i < 1000; i++)
        {
            pool.Acquire().Dispose();
        }

        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 100; i++)
        {
            pool.Acquire().Dispose();
        }

        return (GC.GetAllocatedBytesForCurrentThread() - before) / 100;
    }
}
