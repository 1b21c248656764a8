namespace ChannelPool.Tests.Clearing;

/// <summary>
/// Clear (soft evict): every channel opened before the call retires, idle ones at once, leased ones when they come back,
/// opens under way as they land, while the pool keeps serving with new channels.
/// </summary>
public class ClearTests : PoolTestBase
{
    [Test]
    public async Task Clear_WhileLeasesAreOut_ClosesIdleChannelsNow_AndLeasedOnesWhenTheyComeBack()
    {
        var pool = CreatePool(o => o.PoolSize = 4);
        await pool.WarmUpAsync().Within();
        var before = Factory.Channels.ToList();
        var first = await pool.AcquireAsync();
        var second = await pool.AcquireAsync();
        var leased = new[] { first.Channel, second.Channel };

        var cleared = pool.ClearAsync();

        await Eventually.That(() => before.Except(leased).All(c => c.IsClosed), "the two idle channels closed at once");
        await UntilIdle(pool, 4);
        Assert.That(leased, Has.All.Matches<FakeChannel>(c => c.IsOpen), "a leased channel is left to its holder: its call finishes");
        Assert.That(first.Channel, Is.SameAs(leased[0]), "the lease still holds its channel");
        Assert.That(cleared.IsCompleted, Is.False, "the clear waits for the leased channels");
        await using (var fresh = await pool.AcquireAsync().Within())
        {
            Assert.That(before, Does.Not.Contain(fresh.Channel), "a lease after the clear gets a new channel");
        }

        first.Dispose();
        second.Dispose();
        await cleared.Within();

        Assert.That(leased, Has.All.Matches<FakeChannel>(c => c.IsClosed), "each retired channel closed gracefully when it came back");
        Assert.That(before, Has.All.Matches<FakeChannel>(c => c.EndCalls == 1));
        Assert.That(pool.GetSnapshot() is { Idle: 4, Leased: 0 }, Is.True, $"the pool serves on with new channels: {pool.GetSnapshot()}");
        Assert.That(Factory.OpenChannels.Intersect(before), Is.Empty);
    }

    [Test]
    public async Task Clear_DuringARefill_RetiresTheOpensAlreadyUnderWay_AsTheyLand()
    {
        var pool = CreatePool(o => o.PoolSize = 4);
        Factory.HoldOpens();
        var warmUp = pool.WarmUpAsync(readyChannels: 0);
        await Eventually.That(() => Factory.OpensInFlight == 4, "four opens are under way");

        await pool.ClearAsync().Within();
        Factory.AllowOpens(4);

        await Eventually.That(
            () => Factory.Channels is { Count: 4 } landed && landed.All(c => c.IsClosed),
            () => $"the four opened before the clear were closed as they landed ({pool.GetSnapshot()})");
        Factory.StopHoldingOpens();
        await UntilIdle(pool, 4);
        await UntilQuiet(pool);
        await warmUp.Within();
        Assert.That(Factory.OpenChannels.Select(c => c.Id), Has.All.GreaterThan(4), "the pool refilled with channels opened after the clear");
    }

    [Test]
    public async Task Clear_OnASharedChannel_LetsNoFurtherLeaseJoinIt_AndClosesItAfterItsLastLease()
    {
        var options = SmallPool(poolSize: 2);
        options.MaxLeasesPerChannel = 4;
        options.LeaseSharing = LeaseSharing.Always;
        var pool = CreatePool(options);
        await pool.WarmUpAsync().Within();
        var a = await pool.AcquireAsync();
        var b = await pool.AcquireAsync();
        var shared = a.Channel;
        Assert.That(b.Channel, Is.SameAs(shared), "the two leases share a channel");

        var cleared = pool.ClearAsync();
        await using (var later = await pool.AcquireAsync().Within())
        {
            Assert.That(later.Channel, Is.Not.SameAs(shared), "no lease joins a retired channel");
        }

        a.Dispose();
        Assert.That(shared.IsOpen, Is.True, "another lease still holds it");
        b.Dispose();
        await cleared.Within();
        Assert.That(shared.IsClosed, Is.True, "its last release closed it");
    }

    [Test]
    public async Task Clear_WithEightCallersWaiting_ServesThemFromItsOwnOpens_AndIdleReturnsToPoolSize()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 10;
            o.MaxChannels = 30;
            o.MaxConcurrentOpens = 30;
        });
        await pool.WarmUpAsync().Within();
        Factory.HoldOpens();
        _ = pool.ClearAsync();
        var waiting = Enumerable.Range(0, 8).Select(_ => pool.AcquireAsync().AsTask()).ToList();
        await Eventually.That(() => pool.GetSnapshot().Waiting == 8, () => $"eight callers wait ({pool.GetSnapshot()})");
        Assert.That(pool.GetSnapshot().Opening, Is.EqualTo(10), "the clear's ten opens serve the waiters: no waiter adds one of its own");

        // Each caller makes its call and gives the channel back, which hands it to the next one waiting.
        Factory.AllowOpens(1);
        foreach (var caller in waiting)
        {
            (await caller.Within()).Dispose();
        }

        Factory.StopHoldingOpens();
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot() is { Idle: 10, Leased: 0, Waiting: 0 }, Is.True, $"idle back at PoolSize, not above: {pool.GetSnapshot()}");
        Assert.That(Factory.Opened, Is.EqualTo(20), "ten for the warm-up, ten for the clear");
    }

    [Test]
    public async Task ClearAsync_Cancelled_StopsOnlyTheWait_AndTheClearStaysInForce()
    {
        var pool = CreatePool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        var heldChannel = held.Channel;
        using var cancel = new CancellationTokenSource();

        var cleared = pool.ClearAsync(cancel.Token);
        await cancel.CancelAsync();

        Assert.ThrowsAsync<TaskCanceledException>(() => cleared.Within());
        held.Dispose();
        await Eventually.That(() => heldChannel.IsClosed, "the channel leased at the clear still retired when it came back");
    }

    [Test]
    public async Task ClearAsync_OnAPoolWithNothingOpen_CompletesAtOnce()
    {
        var pool = CreatePool(o => o.PoolSize = 2);

        await pool.ClearAsync().Within();

        // Opens are counted when they start, so a clear that warmed the pool shows here whatever the worker's speed.
        Assert.That(pool.GetSnapshot(), Has.Property(nameof(ChannelPoolSnapshot.Opening)).Zero.And.Property(nameof(ChannelPoolSnapshot.TotalOpened)).Zero, "a clear does not warm a pool nobody has used");
    }

    [Test]
    public async Task ClearAsync_DuringADrain_ThrowsNamingThePool()
    {
        var pool = CreatePool(o => o.PoolSize = 1);
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        var drain = pool.DrainAsync();

        var error = Assert.Throws<ObjectDisposedException>(() => pool.ClearAsync());

        Assert.That(error!.Message, Does.Contain($"Channel pool '{pool.Name}' cannot be cleared: it is draining or drained"));
        held.Dispose();
        await drain.Within();
    }

    [Test]
    public async Task ClearAsync_AfterADrain_ThrowsNamingThePool()
    {
        var pool = CreatePool(o => o.PoolSize = 1);
        await pool.DrainAsync().Within();

        var error = Assert.Throws<ObjectDisposedException>(() => pool.ClearAsync());

        Assert.That(error!.Message, Does.Contain($"'{pool.Name}' cannot be cleared"));
    }
}
