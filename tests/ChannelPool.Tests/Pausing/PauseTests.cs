using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace ChannelPool.Tests.Pausing;

/// <summary>
/// Pause and resume: while paused the pool opens nothing and hands out nothing; acquires fail at once or wait, as
/// <see cref="ChannelPoolOptions.AcquireWhilePaused"/> says; resume serves the waiters in order and refills.
/// </summary>
public class PauseTests : PoolTestBase
{
    [Test]
    public async Task Pause_WhileCallersWait_KeepsThemWaiting_AndResumeServesThemInOrder()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 2;
            o.MaxChannels = 2;
            o.AcquireWhilePaused = PausedAcquireMode.Wait;
        });
        await pool.WarmUpAsync().Within();
        var held = new[] { await pool.AcquireAsync(), await pool.AcquireAsync() };
        var first = pool.AcquireAsync().AsTask();
        var second = pool.AcquireAsync().AsTask();
        await Eventually.That(() => pool.GetSnapshot().Waiting == 2, "two callers wait for a channel");

        var heldChannels = held.Select(h => h.Channel).ToList();
        pool.Pause();
        held[0].Dispose();
        held[1].Dispose();

        Assert.That(pool.GetSnapshot() is { Idle: 2, Waiting: 2, IsPaused: true }, Is.True, $"released channels rest, nobody is served: {pool.GetSnapshot()}");
        Assert.That(first.IsCompleted || second.IsCompleted, Is.False);

        pool.Resume();
        var (a, b) = (await first.Within(), await second.Within());
        Assert.That(new[] { a.Channel, b.Channel }, Is.EquivalentTo(heldChannels), "the waiters got the rested channels");
        Assert.That(Factory.OpenAttempts, Is.EqualTo(2), "and nothing was opened for them");
        Assert.That(pool.GetSnapshot() is { Leased: 2, Waiting: 0, IsPaused: false }, Is.True, $"{pool.GetSnapshot()}");
        a.Dispose();
        b.Dispose();
    }

    [Test]
    public async Task Pause_InFailMode_FailsWaitingCallersAndLaterOnesAtOnce_SayingThePoolIsPaused()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxChannels = 1;
        });
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        var waiting = pool.AcquireAsync().AsTask();
        await Eventually.That(() => pool.GetSnapshot().Waiting == 1, "a caller waits");

        pool.Pause();

        var waited = Assert.ThrowsAsync<ChannelPoolUnavailableException>(() => waiting.Within());
        var later = Assert.ThrowsAsync<ChannelPoolUnavailableException>(async () => await pool.AcquireAsync());
        var blocking = Assert.Throws<ChannelPoolUnavailableException>(() => pool.Acquire());
        foreach (var error in new[] { waited!, later!, blocking! })
        {
            Assert.That(error.Message, Does.Contain($"Pool '{pool.Name}' is paused"));
            Assert.That(error.Snapshot.IsPaused, Is.True);
        }

        held.Dispose();
        pool.Resume();
        await using var afterResume = await pool.AcquireAsync().Within();
    }

    [Test]
    public async Task WhilePaused_NothingOpens_AndResumeRefills()
    {
        var pool = CreatePool(o => o.PoolSize = 4);
        await pool.WarmUpAsync().Within();

        pool.Pause();
        await pool.ClearAsync().Within();
        await UntilQuiet(pool);

        Assert.That(pool.GetSnapshot() is { Idle: 0, Opening: 0 }, Is.True, $"a paused pool does not refill, even after a clear: {pool.GetSnapshot()}");
        Assert.That(Factory.OpenAttempts, Is.EqualTo(4));

        pool.Resume();
        await UntilIdle(pool, 4);
        Assert.That(Factory.OpenAttempts, Is.EqualTo(8), "resume refilled");
    }

    [Test]
    public async Task WhilePaused_LeasesAlreadyOut_GoOn_AndTheirChannelsRestUntilResume()
    {
        var pool = CreatePool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        var channel = held.Channel;
        await UntilIdle(pool, 2);

        pool.Pause();
        Assert.That(held.Channel, Is.SameAs(channel), "a lease taken before the pause keeps working");
        held.Dispose();

        Assert.That(pool.GetSnapshot() is { Idle: 3, Leased: 0 }, Is.True, $"{pool.GetSnapshot()}");
        Assert.That(channel.IsOpen, Is.True, "a healthy channel rests; it is not closed for the pause");
        pool.Resume();
        await using var again = await pool.AcquireAsync().Within();
        Assert.That(again.Channel, Is.SameAs(channel), "the rested channel serves again after resume");
    }

    [Test]
    public async Task WhilePausedInWaitMode_ACallerStillTimesOut_AndTheErrorSaysThePoolIsPaused()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.AcquireTimeout = TimeSpan.FromSeconds(5);
            o.AcquireWhilePaused = PausedAcquireMode.Wait;
        });
        await pool.WarmUpAsync().Within();
        pool.Pause();

        var waiting = pool.AcquireAsync().AsTask();
        Time.Advance(TimeSpan.FromSeconds(5));

        var error = Assert.ThrowsAsync<ChannelPoolTimeoutException>(() => waiting.Within());
        Assert.That(error!.Message, Does.Contain("The pool is paused").And.Contain($"'{pool.Name}'"));
    }

    [Test]
    public async Task Resume_ClosesRestingChannelsThatExpiredDuringThePause_InsteadOfHandingThemOut()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 2;
            o.AcquireWhilePaused = PausedAcquireMode.Wait;
        });
        await pool.WarmUpAsync().Within();
        var before = Factory.Channels.ToList();
        pool.Pause();
        var waiting = pool.AcquireAsync().AsTask();
        before[0].Fault();

        pool.Resume();

        await using var lease = await waiting.Within();
        Assert.That(lease.Channel, Is.Not.SameAs(before[0]), "the faulted resting channel was not handed to the waiter");
        await Eventually.That(() => before[0].IsAborted, "it was aborted instead");
    }

    [Test]
    public async Task PauseTwice_AndResumeTwice_ThrowNamingThePool_AndLeaveTheStateAsItWas()
    {
        var pool = CreatePool(Factory, SmallPool(poolSize: 1));
        await pool.WarmUpAsync().Within();

        pool.Pause();
        Assert.That(() => pool.Pause(), Throws.InvalidOperationException.With.Message.EqualTo(
            $"Channel pool '{pool.Name}' is already paused. Resume it first; check ChannelPoolSnapshot.IsPaused to pause only a running pool."));
        Assert.That(pool.GetSnapshot().IsPaused, Is.True, "the refused pause leaves it paused");
        Assert.That(pool.GetSnapshot().ToString(), Does.EndWith(", paused"));

        pool.Resume();
        Assert.That(() => pool.Resume(), Throws.InvalidOperationException.With.Message.EqualTo(
            $"Channel pool '{pool.Name}' is not paused, so it cannot be resumed. Check ChannelPoolSnapshot.IsPaused to resume only a paused pool."));
        Assert.That(pool.GetSnapshot().IsPaused, Is.False, "the refused resume leaves it running");
        await using var lease = await pool.AcquireAsync().Within();
    }

    [Test]
    public async Task PauseOrResume_DuringADrain_ThrowsNamingThePool()
    {
        var pool = CreatePool(o => o.PoolSize = 1);
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        var drain = pool.DrainAsync();

        Assert.That(() => pool.Pause(), Throws.InstanceOf<ObjectDisposedException>().With.Message.Contains($"Channel pool '{pool.Name}' cannot be paused: it is draining or drained"));
        Assert.That(() => pool.Resume(), Throws.InstanceOf<ObjectDisposedException>().With.Message.Contains($"Channel pool '{pool.Name}' cannot be resumed"));
        held.Dispose();
        await drain.Within();
    }

    [Test]
    public async Task Pause_AfterADrain_ThrowsNamingThePool()
    {
        var pool = CreatePool(o => o.PoolSize = 1);
        await pool.DrainAsync().Within();

        Assert.That(() => pool.Pause(), Throws.InstanceOf<ObjectDisposedException>().With.Message.Contains($"'{pool.Name}' cannot be paused"));
    }

    [Test]
    public async Task APausedPool_DrainsLikeAnyOther()
    {
        var pool = CreatePool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();
        pool.Pause();

        await pool.DrainAsync().Within();

        Assert.That(Factory.OpenChannels, Is.Empty, "the resting channels were closed");
    }
}
