namespace ChannelPool.Tests.IdleTarget;

/// <summary>The adaptive idle target meeting the pool controls: the idle timeout, a pause and a clear.</summary>
public partial class AdaptiveIdleTargetTests
{
    [Test]
    public async Task IdleTimeout_ClosesDownToTheAdaptiveTargetInForce_NotToPoolSize()
    {
        var pool = AdaptivePool(o =>
        {
            o.IdleTimeout = TimeSpan.FromSeconds(3);
            o.CleanupInterval = TimeSpan.FromSeconds(1);
        });
        await QuietUntilMinimum(pool);
        var spike = await AcquireAll(pool, 12);
        await UntilQuiet(pool);
        spike.ForEach(lease => lease.Dispose());
        Assert.That(pool.GetSnapshot() is { IdleTarget: 12, Idle: 24 }, Is.True, $"the spike's twelve and the refill's twelve idle ({pool.GetSnapshot()})");

        // Through the window the target holds 12: the timeout closes the surplus over it, and keeps 12, not PoolSize's 4.
        TargetsAfterTicks(pool, 8);
        await Eventually.That(() => pool.GetSnapshot() is { IdleTarget: 12, Idle: 12 }, () => $"closed down to the target of 12 ({pool.GetSnapshot()})");

        // Then the target decays to its minimum of 2, below PoolSize, and the idle count follows it down.
        Assert.That(TargetsAfterTicks(pool, 10)[^1], Is.EqualTo(2));
        await Eventually.That(() => pool.GetSnapshot() is { IdleTarget: 2, Idle: 2 }, () => $"closed down to the target of 2 ({pool.GetSnapshot()})");
        await UntilQuiet(pool);
        Assert.That(Factory.Channels.Count(c => c.IsClosed), Is.EqualTo(Factory.Opened - 2), "every other channel closed gracefully");
    }

    [Test]
    public async Task WhilePaused_TheTargetHolds_AndCallersWaitingForTheResumeAreNotDemand()
    {
        var pool = AdaptivePool(o =>
        {
            o.AcquireWhilePaused = PausedAcquireMode.Wait;
            o.AcquireTimeout = TimeSpan.FromMinutes(1);
        });
        await QuietUntilMinimum(pool);
        (await AcquireAll(pool, 12)).ForEach(lease => lease.Dispose());
        Assert.That(TargetsAfterTicks(pool, 9), Is.EqualTo(new[] { 12, 12, 12, 12, 12, 12, 12, 12, 9 }), "decaying once the peak left the window");

        // Twenty callers wait through ten ticks of a pause: the target neither rises to them nor goes on decaying.
        pool.Pause();
        var waiting = Enumerable.Range(0, 20).Select(_ => pool.AcquireAsync().AsTask()).ToList();
        Assert.That(TargetsAfterTicks(pool, 10), Is.All.EqualTo(9), "held through the pause");

        pool.Resume();
        var served = await Task.WhenAll(waiting).Within();
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(9), "the callers served at the resume did not raise it");
        served.ToList().ForEach(lease => lease.Dispose());

        // The pause took no time from the decay: it goes on where it stopped.
        Assert.That(TargetsAfterTicks(pool, 5), Is.EqualTo(new[] { 6, 5, 3, 3, 2 }));
    }

    [Test]
    public async Task Clear_NeitherResetsTheTarget_NorCountsTheChannelsItRetiresAsUsedUp()
    {
        // Two pools side by side on one clock, one cleared and one not. Opens that take half a second give the target a
        // flow term, so a clear counted as channels used up would raise it above the other pool's.
        FakeChannelFactory[] factories = [new(), new()];
        DefaultChannelPool<FakeChannel>[] pools = [.. factories.Select(factory => CreatePool(factory, AdaptiveOptions()))];
        var cleared = pools[0];
        await SlowWarmUp(pools, factories);

        var leases = new List<ChannelLease<FakeChannel>>[2];
        for (var i = 0; i < pools.Length; i++)
        {
            leases[i] = await AcquireAll(pools[i], 8);
            await UntilQuiet(pools[i]);
        }

        Assert.That(pools.Select(p => p.GetSnapshot().IdleTarget), Is.All.EqualTo(8), "above PoolSize's 4, so a reset would show");

        var clearing = cleared.ClearAsync();
        leases.SelectMany(held => held).ToList().ForEach(lease => lease.Dispose());
        await clearing.Within();
        await UntilQuiet(cleared);

        var targets = pools.Select(_ => new List<int>()).ToArray();
        for (var tick = 0; tick < 16; tick++)
        {
            Time.Advance(Tick);
            for (var i = 0; i < pools.Length; i++)
            {
                targets[i].Add(pools[i].GetSnapshot().IdleTarget);
            }
        }

        Assert.That(targets[0], Is.EqualTo(targets[1]), "the cleared pool's target moved as the other's");
        Assert.That(targets[0][0], Is.EqualTo(8), "the peak of 8 still held after the clear");
    }

    /// <summary>Warms <paramref name="pools"/> with opens that each take half a second of fake time.</summary>
    private async Task SlowWarmUp(DefaultChannelPool<FakeChannel>[] pools, FakeChannelFactory[] factories)
    {
        factories.ToList().ForEach(factory => factory.HoldOpens());
        var warmUps = pools.Select(pool => pool.WarmUpAsync()).ToList();
        await Eventually.That(() => factories.All(factory => factory.OpensInFlight == 4), "every warm-up open is under way");
        Time.Advance(TimeSpan.FromMilliseconds(500));
        factories.ToList().ForEach(factory => factory.StopHoldingOpens());
        await Task.WhenAll(warmUps).Within();
    }
}
