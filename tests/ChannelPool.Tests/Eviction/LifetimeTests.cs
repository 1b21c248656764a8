namespace ChannelPool.Tests.Eviction;

/// <summary>
/// Lifetime 90 s without jitter: each channel's deadline is 90 s after it opened. Lifetime checks use the pool clock,
/// which ticks every second and retires a channel up to one tick early, so a channel opened at 0 s counts as expired
/// from 89 s. The cleanup timer runs every 43 s (43, 86, 129 ...).
/// </summary>
public class LifetimeTests : PoolTestBase
{
    private DefaultChannelPool<FakeChannel> NinetySecondPool(int poolSize = 4) => CreatePool(o =>
    {
        o.PoolSize = poolSize;
        o.ChannelLifetime = TimeSpan.FromSeconds(90);
    });

    [Test]
    public async Task ExpiredIdleChannels_AreClosedGracefully_AndReplaced()
    {
        var pool = NinetySecondPool();
        await pool.WarmUpAsync().Within();
        var originals = Factory.Channels.ToList();

        for (var second = 1; second <= 90; second++)
        {
            Time.Advance(TimeSpan.FromSeconds(1));
            await UntilQuiet(pool);
        }

        await Eventually.That(() => originals.All(c => c.IsClosed), "every original channel closed within its lifetime");
        await UntilIdle(pool, 4);
        Assert.That(originals.Any(c => c.IsAborted), Is.False, "expired channels are closed gracefully");
        Assert.That(Factory.OpenChannels, Has.Count.EqualTo(4));
    }

    [Test]
    public async Task Acquire_NeverHandsOutAnExpiredChannel_EvenBetweenCleanups()
    {
        var pool = NinetySecondPool();
        await pool.WarmUpAsync().Within();
        var originals = Factory.Channels.ToList();

        Time.Advance(TimeSpan.FromSeconds(89));
        await using var lease = await pool.AcquireAsync().Within();

        Assert.That(originals, Does.Not.Contain(lease.Channel));
        await Eventually.That(() => originals.All(c => c.IsClosed), "every expired channel met at lease was closed");
    }

    [Test]
    public async Task Acquire_JustBeforeTheDeadline_StillUsesTheChannel()
    {
        // One channel, so its deadline is the full lifetime. At 88 s its replacement is opening (held here), and the
        // channel itself still serves until the clock's tick before its deadline.
        var pool = NinetySecondPool(poolSize: 1);
        await pool.WarmUpAsync().Within();
        var original = Factory.Channels.Single();
        Factory.HoldOpens();

        Time.Advance(TimeSpan.FromSeconds(88));
        await using var lease = await pool.AcquireAsync().Within();

        Assert.That(lease.Channel, Is.SameAs(original));
        Factory.StopHoldingOpens();
    }

    [Test]
    public async Task Release_AfterTheDeadline_RetiresTheChannelInsteadOfReturningIt()
    {
        var pool = NinetySecondPool(poolSize: 2);
        await pool.WarmUpAsync().Within();
        var lease = await pool.AcquireAsync();
        var channel = lease.Channel;

        Time.Advance(TimeSpan.FromSeconds(89));
        lease.Dispose();

        await Eventually.That(() => channel.IsClosed, "the expired channel was closed on release");
        Assert.That(pool.GetSnapshot().Leased, Is.EqualTo(0));
    }

    [Test]
    public async Task Release_BeforeTheDeadline_ReturnsTheChannelToIdle()
    {
        // One channel, so its deadline is the full lifetime; 87 s is before its replacement (a lead of 2 s) begins.
        var pool = NinetySecondPool(poolSize: 1);
        await pool.WarmUpAsync().Within();
        var lease = await pool.AcquireAsync();
        var channel = lease.Channel;

        // The refill's channel, opened while this one is leased, takes the other half of the circle: it ends and is
        // replaced meanwhile, which is not what this test is about, so the count is read once that has happened.
        Time.Advance(TimeSpan.FromSeconds(87));
        await UntilQuiet(pool);
        var idleBefore = pool.GetSnapshot().Idle;
        lease.Dispose();

        Assert.That(channel.IsOpen, Is.True);
        Assert.That(pool.GetSnapshot() is { Leased: 0 } snapshot && snapshot.Idle == idleBefore + 1, Is.True, $"it went back to idle: {pool.GetSnapshot()}");
        await using var again = await pool.AcquireAsync().Within();
        Assert.That(again.Channel, Is.SameAs(channel), "the most recently used idle channel");
    }

    [Test]
    public async Task Deadlines_StayWithinOneLifetime_AndSpreadOverIt()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 50;
            o.MaxChannels = 126;
            o.ChannelLifetime = TimeSpan.FromSeconds(100);
            o.LifetimeJitter = 0.1;
            o.CleanupInterval = TimeSpan.FromSeconds(1);
        });
        await pool.WarmUpAsync().Within();
        var originals = Factory.Channels.ToList();
        var retiredAtSecond = new Dictionary<int, int>();

        for (var second = 1; second <= 100; second++)
        {
            Time.Advance(TimeSpan.FromSeconds(1));
            await UntilQuiet(pool);
            var retired = originals.Count(c => !c.IsOpen) - retiredAtSecond.Values.Sum();
            if (retired > 0)
            {
                retiredAtSecond[second] = retired;
            }
        }

        // Deadlines are spread over the lifetime (ExpiryTests) and jitter only brings them forward: none after 100 s.
        Assert.That(retiredAtSecond.Values.Sum(), Is.EqualTo(50), "every original channel retired by 100 s");
        Assert.That(retiredAtSecond.Values.Max(), Is.LessThanOrEqualTo(3), $"retirements spread over time: {string.Join(", ", retiredAtSecond)}");
    }

    [Test]
    public async Task CleanupTimer_AbortsIdleChannelsThatFaulted()
    {
        // A lifetime far beyond the test, so only the cleanup ends channels here.
        var pool = CreatePool(o =>
        {
            o.ChannelLifetime = TimeSpan.FromHours(1);
            o.CleanupInterval = TimeSpan.FromSeconds(43);
        });
        await pool.WarmUpAsync().Within();
        var faulted = Factory.Channels.Take(2).ToList();
        faulted.ForEach(c => c.Fault());

        Time.Advance(TimeSpan.FromSeconds(43));

        await Eventually.That(() => faulted.All(c => c.IsAborted), "the cleanup aborted both faulted channels");
        await UntilIdle(pool, 4);
        Assert.That(Factory.OpenChannels, Has.Count.EqualTo(4));
    }
}
