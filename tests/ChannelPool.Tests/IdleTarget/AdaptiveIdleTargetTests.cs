using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;

namespace ChannelPool.Tests.IdleTarget;

/// <summary>
/// The adaptive idle target driving a pool, on fake time: a window of 8 s (a tick a second), a half-life of 2 s, a
/// minimum of 2. Each test first lets the target forget the pool size it starts at, as quiet hours would.
/// </summary>
public partial class AdaptiveIdleTargetTests : PoolTestBase
{
    private static readonly TimeSpan Tick = TimeSpan.FromSeconds(1);

    [Test]
    public async Task Target_RisesWithinOneWindowOfASpike_SoTheNextDoublingFindsItsChannelsOpen()
    {
        var pool = AdaptivePool();
        await QuietUntilMinimum(pool);

        // The first step: twelve callers at once find four idle channels; eight wait for opens.
        var first = await SpikeWhileOpensAreHeld(pool, 12);
        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(12), "risen at the refill the spike started, before any tick");
        await UntilIdle(pool, 12);

        // The next step doubles the callers: every one of them finds an idle channel.
        var second = Enumerable.Range(0, 12).Select(_ => pool.AcquireAsync()).ToList();
        Assert.That(second.Select(acquire => acquire.IsCompletedSuccessfully), Is.All.True, "no caller of the second step waited for an open");

        // The refill this step started keeps headroom for arrivals again: 24 more would not fit under MaxChannels (60),
        // so half the 36 channels left.
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot() is { Leased: 24, IdleTarget: 18, Idle: 18 }, Is.True, pool.GetSnapshot().ToString());

        first.ForEach(lease => lease.Dispose());
        second.ForEach(acquire => acquire.Result.Dispose());
    }

    [Test]
    public async Task Target_AtAPeak_CountsTheLeasedChannels_RatherThanStackingAFullPeakOfIdleOnTop()
    {
        var pool = AdaptivePool();
        await QuietUntilMinimum(pool);

        // Thirty in use of MaxChannels 60: a doubling cannot fit, so the pool keeps half the 30 left idle, 45 open,
        // not 30 idle on top of the 30 leased.
        var leases = await AcquireAll(pool, 30);
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot() is { Leased: 30, IdleTarget: 15, Idle: 15 }, Is.True, pool.GetSnapshot().ToString());
        Assert.That(Factory.Opened, Is.EqualTo(45), "four warm-up channels, 26 for the callers who waited, 15 of headroom");
        Assert.That(TargetsAfterTicks(pool, 3), Is.All.EqualTo(15), "held at the plateau");

        // Once the callers leave, the channels they held are the headroom for their return: nothing to open.
        leases.ForEach(lease => lease.Dispose());
        Assert.That(TargetsAfterTicks(pool, 2), Is.EqualTo(new[] { 15, 30 }));
        await UntilQuiet(pool);
        Assert.That(Factory.Opened, Is.EqualTo(45));
    }

    [Test]
    public async Task Target_HoldsThePeakForTheWindow_ThenHalvesTheExcessEveryHalfLife()
    {
        var pool = AdaptivePool();
        await QuietUntilMinimum(pool);
        (await AcquireAll(pool, 12)).ForEach(lease => lease.Dispose());

        // Opens still in flight would span the ticks' fake seconds and read as a slow open, lifting the target.
        await UntilQuiet(pool);
        var targets = TargetsAfterTicks(pool, 17);

        // Eight ticks hold the bucket with the peak; then the peak held, 12 over the demand of 0, decays by 2^(-1/2) a
        // tick (8.5, 6, 4.2, 3, 2.1 …, rounded up) until the minimum of 2 stops it.
        Assert.That(targets, Is.EqualTo(new[] { 12, 12, 12, 12, 12, 12, 12, 12, 9, 6, 5, 3, 3, 2, 2, 2, 2 }));
        Assert.That(pool.GetSnapshot().Idle, Is.GreaterThanOrEqualTo(12), "a lower target closes nothing: surplus channels end at their lifetime, unreplaced");
    }

    [Test]
    public async Task Target_StaysBetweenTheMinimumAndMaxChannels()
    {
        var pool = AdaptivePool(o =>
        {
            o.MaxChannels = 16;
            o.IdleTarget.Minimum = 3;
        });

        var quiet = TargetsAfterTicks(pool, 40);
        Assert.That(quiet[^1], Is.EqualTo(3), "quiet: down to the minimum");
        Assert.That(quiet, Is.All.InRange(3, 16));

        // Busy, all 16 in use: nothing more can open, so the target is its minimum, not 16 idle channels on top.
        var leases = await AcquireAll(pool, 16);
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(3));
        Assert.That(TargetsAfterTicks(pool, 8), Is.All.EqualTo(3));

        // The callers gone, their channels are the headroom: up to MaxChannels and no further.
        leases.ForEach(lease => lease.Dispose());
        var after = TargetsAfterTicks(pool, 9);
        Assert.That(after[..2], Is.EqualTo(new[] { 3, 16 }), "the first tick still counts the busy bucket");
        Assert.That(after, Is.All.InRange(3, 16));
    }

    [Test]
    public async Task Target_NeverOpensPastMaxChannels()
    {
        var pool = AdaptivePool(o => o.MaxChannels = 10);
        await QuietUntilMinimum(pool);

        var leases = await AcquireAll(pool, 10);
        var waiting = pool.AcquireAsync().AsTask();
        await UntilQuiet(pool);
        TargetsAfterTicks(pool, 3);

        var snapshot = pool.GetSnapshot();
        Assert.That(snapshot.IdleTarget, Is.EqualTo(IdleTargetOptions.DefaultMinimum), "every channel in use and a caller waiting: no room for headroom");
        Assert.That(snapshot.Idle + snapshot.Leased + snapshot.Opening, Is.EqualTo(10), snapshot.ToString());
        Assert.That(Factory.Opened, Is.EqualTo(10), "four warm-up channels and six for the spike; none for the target above them");
        Assert.That(waiting.IsCompleted, Is.False);

        leases[0].Dispose();
        (await waiting.Within()).Dispose();
        leases.Skip(1).ToList().ForEach(lease => lease.Dispose());
    }

    [Test]
    public async Task Target_DoesNothingWhileTheBreakerIsOpen()
    {
        var pool = AdaptivePool(o =>
        {
            o.PoolSize = 6;
            o.Resilience.CircuitBreaker.MinimumThroughput = 2;
            o.Resilience.CircuitBreaker.BreakDuration = TimeSpan.FromSeconds(5);
        });
        Factory.OpenFailure = () => new IOException("connection refused");
        _ = pool.WarmUpAsync(0);
        await Eventually.That(() => pool.GetSnapshot().BreakerState == BreakerState.Open, "the breaker opens");
        await UntilQuiet(pool);
        var attempts = Factory.OpenAttempts;

        // Three breaks of 5 s, a tick a second: callers fail fast, the target holds the 6 it had, and the only opens are
        // the breaker's probes, one per break.
        for (var probe = 1; probe <= 3; probe++)
        {
            Assert.That(TargetsAfterTicks(pool, 4), Is.All.EqualTo(6));
            Assert.ThrowsAsync<ChannelPoolUnavailableException>(async () => await pool.AcquireAsync());
            Assert.That(TargetsAfterTicks(pool, 1), Is.All.EqualTo(6));
            await Eventually.That(() => Factory.OpenAttempts == attempts + probe, $"probe {probe} ran");
            await Eventually.That(() => pool.GetSnapshot().BreakerState == BreakerState.Open, "the failed probe reopened the breaker");
            await UntilQuiet(pool);
        }

        Assert.That(Factory.OpenAttempts, Is.EqualTo(attempts + 3), "one probe per break; the target started none");

        // The server is back: the probe closes the breaker and the pool fills to the target it held.
        Factory.OpenFailure = null;
        Time.Advance(TimeSpan.FromSeconds(5));
        await UntilIdle(pool, 6);
        Assert.That(pool.GetSnapshot().BreakerState, Is.EqualTo(BreakerState.Closed));
    }

    [Test]
    public async Task Target_CountsSharedLeasesInChannels()
    {
        var pool = AdaptivePool(o => (o.MaxLeasesPerChannel, o.LeaseSharing) = (4, LeaseSharing.Always));
        await QuietUntilMinimum(pool);

        // Sixteen leases four to a channel need four channels, and the target follows channels, not leases.
        var first = await AcquireAll(pool, 16);
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot() is { Leased: 4, IdleTarget: 4, Idle: 4 }, Is.True, pool.GetSnapshot().ToString());

        var second = Enumerable.Range(0, 16).Select(_ => pool.AcquireAsync()).ToList();
        Assert.That(second.Select(acquire => acquire.IsCompletedSuccessfully), Is.All.True, "the doubling found idle channels to share");
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot() is { Leased: 8, IdleTarget: 8 }, Is.True, pool.GetSnapshot().ToString());

        first.ForEach(lease => lease.Dispose());
        second.ForEach(acquire => acquire.Result.Dispose());
    }

    [Test]
    public async Task WarmUp_RaisesTheTargetToPoolSize_AndFillsToIt()
    {
        var pool = AdaptivePool(o => o.PoolSize = 9);
        await pool.WarmUpAsync().Within();
        await QuietUntilMinimum(pool);

        await pool.WarmUpAsync().Within();

        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(9));
        Assert.That(TargetsAfterTicks(pool, 7), Is.All.EqualTo(9), "held for a window, as demand would be");
    }

    [Test]
    public async Task FixedTarget_IsPoolSize_WhateverDemandAndTimeDo()
    {
        var pool = CreatePool(o => o.PoolSize = 5);
        await pool.WarmUpAsync().Within();

        var leases = await AcquireAll(pool, 8);
        var targets = TargetsAfterTicks(pool, 30);

        Assert.That(targets, Is.All.EqualTo(5));
        Assert.That(pool.RefillThreshold, Is.EqualTo(2));
        leases.ForEach(lease => lease.Dispose());
    }

    [Test]
    public async Task RefillThreshold_LeftUnset_IsOneBelowTheTarget_SoIdleStaysAtTheRecentPeak()
    {
        var pool = AdaptivePool(o => o.PoolSize = 10);
        Assert.That(pool.RefillThreshold, Is.EqualTo(9));
        await QuietUntilMinimum(pool);
        Assert.That(pool.RefillThreshold, Is.EqualTo(1));

        // Six callers, then six more: after the first six, the pool is back to six idle, not three.
        var first = await AcquireAll(pool, 6);
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot() is { IdleTarget: 6, Idle: 6 }, Is.True, pool.GetSnapshot().ToString());
        Assert.That(pool.RefillThreshold, Is.EqualTo(5));

        var second = Enumerable.Range(0, 6).Select(_ => pool.AcquireAsync()).ToList();
        Assert.That(second.Select(acquire => acquire.IsCompletedSuccessfully), Is.All.True);
        first.ForEach(lease => lease.Dispose());
        second.ForEach(acquire => acquire.Result.Dispose());
    }

    [Test]
    public async Task RefillThreshold_KeepsItsShareOfTheTarget()
    {
        var pool = AdaptivePool(o =>
        {
            o.PoolSize = 20;
            o.MaxChannels = 40;
            o.RefillThreshold = 5;
        });
        Assert.That(pool.RefillThreshold, Is.EqualTo(5), "a quarter of the starting target of 20");

        await QuietUntilMinimum(pool, minimum: 2);
        Assert.That(pool.RefillThreshold, Is.EqualTo(0), "a quarter of 2, rounded down");

        // Twelve of the twenty idle channels leased leave eight, above the threshold: the next tick raises the target.
        var leases = await AcquireAll(pool, 12);
        Assert.That(TargetsAfterTicks(pool, 1), Is.EqualTo(new[] { 12 }));
        Assert.That(pool.RefillThreshold, Is.EqualTo(3));
        leases.ForEach(lease => lease.Dispose());
    }

    [Test]
    public async Task Reconfigure_SwitchesBetweenFixedAndAdaptive()
    {
        var options = AdaptiveOptions();
        options.IdleTarget.Mode = IdleTargetMode.Fixed;
        var pool = CreatePool(options);
        Assert.That(TargetsAfterTicks(pool, 30), Is.All.EqualTo(4));

        options.IdleTarget.Mode = IdleTargetMode.Adaptive;
        pool.Reconfigure(options);
        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(4), "switched on, it starts at PoolSize");
        await QuietUntilMinimum(pool);

        options.IdleTarget.Minimum = 3;
        pool.Reconfigure(options);
        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(3), "a reload keeps the target, within its new bounds");

        options.IdleTarget.Mode = IdleTargetMode.Fixed;
        pool.Reconfigure(options);
        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(4));
        Assert.That(TargetsAfterTicks(pool, 10), Is.All.EqualTo(4), "switched off, the ticks stop moving it");
    }

    [Test]
    public async Task Metrics_ReportTheTarget_AndCountTheLeasesThatWaitedForAnOpen()
    {
        await using var services = new ServiceCollection().AddMetrics().BuildServiceProvider();
        var meters = services.GetRequiredService<IMeterFactory>();
        using var target = new MetricCollector<int>(meters, ChannelPoolTelemetry.MeterName, "channelpool.channel.idle.target");
        using var awaited = new MetricCollector<long>(meters, ChannelPoolTelemetry.MeterName, "channelpool.channel.awaited_opens");
        var pool = CreatePool(AdaptiveOptions(), meterFactory: meters);
        await QuietUntilMinimum(pool);

        var first = await SpikeWhileOpensAreHeld(pool, 12);
        await UntilIdle(pool, 12);
        var second = await AcquireAll(pool, 12);
        await UntilQuiet(pool);

        target.RecordObservableInstruments();
        Assert.That(target.LastMeasurement?.Value, Is.EqualTo(18));
        Assert.That(target.LastMeasurement?.Tags[ChannelPoolTelemetry.PoolNameTag], Is.EqualTo(pool.Name));
        Assert.That(awaited.GetMeasurementSnapshot().Sum(m => m.Value), Is.EqualTo(8), "eight of the first step's twelve, none of the second's");
        first.Concat(second).ToList().ForEach(lease => lease.Dispose());
    }

    [TestCase(IdleTargetMode.Fixed)]
    [TestCase(IdleTargetMode.Adaptive)]
    public async Task LeaseAndRelease_AllocateNothing_WhateverTheIdleTarget(IdleTargetMode mode)
    {
        var pool = AdaptivePool(o => o.IdleTarget.Mode = mode);
        await pool.WarmUpAsync().Within();
        LeaseAndRelease(pool, 1_000);

        // The fewest bytes of three windows: a one-off allocation of the runtime's (a CI run once saw 32,664 bytes in
        // one window) lands in one window, while an allocation per lease would show in every one.
        var waited = 0;
        var allocated = long.MaxValue;
        for (var window = 0; window < 3; window++)
        {
            var before = GC.GetAllocatedBytesForCurrentThread();
            waited += LeaseAndRelease(pool, 10_000);
            allocated = Math.Min(allocated, GC.GetAllocatedBytesForCurrentThread() - before);
        }

        Assert.That(waited, Is.Zero, "a warm pool leases at once");
        Assert.That(allocated, Is.Zero, "10,000 leases and releases allocated this much in each of three windows");

        static int LeaseAndRelease(DefaultChannelPool<FakeChannel> pool, int times)
        {
            var waited = 0;
            for (var i = 0; i < times; i++)
            {
                var acquire = pool.AcquireAsync();
                if (acquire.IsCompletedSuccessfully)
                {
                    acquire.Result.Dispose();
                }
                else
                {
                    waited++;
                    acquire.AsTask().GetAwaiter().GetResult().Dispose();
                }
            }

            return waited;
        }
    }

    private static ChannelPoolOptions AdaptiveOptions()
    {
        var options = SmallPool(poolSize: 4, maxChannels: 60);
        options.IdleTarget.Mode = IdleTargetMode.Adaptive;
        options.IdleTarget.Window = TimeSpan.FromSeconds(8);
        options.IdleTarget.DecayHalfLife = TimeSpan.FromSeconds(2);

        // These tests count opens for demand; a lifetime far beyond their few minutes keeps replacements out of the
        // count (the lifetime spreads deadlines over itself, so at 90 s some would end within a test). The idle timeout
        // and cleanup keep what the 90 s default gave them.
        options.ChannelLifetime = TimeSpan.FromHours(1);
        options.IdleTimeout = TimeSpan.FromSeconds(45);
        options.CleanupInterval = TimeSpan.FromSeconds(43);
        return options;
    }

    private DefaultChannelPool<FakeChannel> AdaptivePool(Action<ChannelPoolOptions>? configure = null)
    {
        var options = AdaptiveOptions();
        configure?.Invoke(options);
        return CreatePool(options);
    }

    /// <summary>Warms the pool and ticks, with no demand, until the target has come down to its minimum.</summary>
    private async Task QuietUntilMinimum(DefaultChannelPool<FakeChannel> pool, int minimum = IdleTargetOptions.DefaultMinimum)
    {
        await pool.WarmUpAsync(0).Within();
        await UntilQuiet(pool);
        TargetsAfterTicks(pool, 30);
        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(minimum), pool.GetSnapshot().ToString());
    }

    private int[] TargetsAfterTicks(DefaultChannelPool<FakeChannel> pool, int ticks) =>
        [.. Enumerable.Range(0, ticks).Select(_ =>
        {
            Time.Advance(Tick);
            return pool.GetSnapshot().IdleTarget;
        })];

    /// <summary>
    /// Callers arrive at once while opens are held, so exactly those the idle channels cannot serve wait for an open,
    /// however fast the background worker runs.
    /// </summary>
    private async Task<List<ChannelLease<FakeChannel>>> SpikeWhileOpensAreHeld(DefaultChannelPool<FakeChannel> pool, int count)
    {
        Factory.HoldOpens();
        var acquires = Enumerable.Range(0, count).Select(_ => pool.AcquireAsync().AsTask()).ToList();
        Factory.StopHoldingOpens();
        return [.. await Task.WhenAll(acquires).Within()];
    }

    private static async Task<List<ChannelLease<FakeChannel>>> AcquireAll(DefaultChannelPool<FakeChannel> pool, int count) =>
        [.. await Task.WhenAll(Enumerable.Range(0, count).Select(_ => pool.AcquireAsync().AsTask())).Within()];
}
