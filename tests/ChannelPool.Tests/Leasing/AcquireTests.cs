namespace ChannelPool.Tests.Leasing;

public class AcquireTests : PoolTestBase
{
    private DefaultChannelPool<FakeChannel> SingleChannelPool(Action<ChannelPoolOptions>? configure = null) => CreatePool(o =>
    {
        o.PoolSize = 1;
        o.MaxChannels = 1;
        o.MaxConcurrentOpens = 1;
        configure?.Invoke(o);
    });

    [Test]
    public async Task Acquire_WhenNoChannelFreesUp_TimesOutNamingThePoolAndItsCounts()
    {
        var pool = SingleChannelPool(o => o.AcquireTimeout = TimeSpan.FromSeconds(30));
        await pool.WarmUpAsync().Within();
        await using var held = await pool.AcquireAsync();

        var waiting = pool.AcquireAsync().AsTask();
        Time.Advance(TimeSpan.FromSeconds(29));
        Assert.That(waiting.IsCompleted, Is.False);
        Time.Advance(TimeSpan.FromSeconds(1));

        var error = Assert.ThrowsAsync<ChannelPoolTimeoutException>(() => waiting.Within());
        Assert.That(error!.PoolName, Is.EqualTo(pool.Name));
        Assert.That(error.Timeout, Is.EqualTo(TimeSpan.FromSeconds(30)));
        Assert.That(error.Snapshot is { Idle: 0, Leased: 1, Waiting: 1 }, Is.True, error.Snapshot.ToString());
        Assert.That(error.Message, Does.Contain($"pool '{pool.Name}'").And.Contain("idle=0, leased=1, opening=0, closing=0, waiting=1, breaker=Closed"));
        Assert.That(error.Message, Does.Contain("Every channel is leased"));
        Assert.That(error, Is.InstanceOf<TimeoutException>());
        Assert.That(pool.GetSnapshot().Waiting, Is.EqualTo(0), "the timed-out caller left the queue");
    }

    [Test]
    public async Task AcquireBlocking_WhenNoChannelFreesUp_TimesOut()
    {
        var pool = SingleChannelPool(o => o.AcquireTimeout = TimeSpan.FromSeconds(5));
        await pool.WarmUpAsync().Within();
        using var held = pool.Acquire();

        var blocked = Task.Factory.StartNew(() => pool.Acquire(), TaskCreationOptions.LongRunning);
        await Eventually.That(() => pool.GetSnapshot().Waiting == 1, "the blocking caller waits");
        Time.Advance(TimeSpan.FromSeconds(5));

        Assert.ThrowsAsync<ChannelPoolTimeoutException>(() => blocked.Within());
    }

    [Test]
    public async Task Acquire_Cancelled_ThrowsAndLeavesTheQueue_AndTheChannelIsNotLost()
    {
        var pool = SingleChannelPool();
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        using var cancellation = new CancellationTokenSource();

        var waiting = pool.AcquireAsync(cancellation.Token).AsTask();
        await cancellation.CancelAsync();

        var error = Assert.ThrowsAsync<OperationCanceledException>(() => waiting.Within());
        Assert.That(error!.CancellationToken, Is.EqualTo(cancellation.Token));
        Assert.That(pool.GetSnapshot().Waiting, Is.EqualTo(0));

        held.Dispose();
        Assert.That(pool.GetSnapshot() is { Idle: 1, Leased: 0 }, Is.True, "the released channel went back to idle, not to the cancelled caller");
    }

    [Test]
    public async Task Acquire_WithATokenAlreadyCancelled_FailsAtOnceWhenNothingIsIdle()
    {
        var pool = SingleChannelPool();
        await pool.WarmUpAsync().Within();
        await using var held = await pool.AcquireAsync();

        var acquire = pool.AcquireAsync(new CancellationToken(canceled: true));

        Assert.That(acquire.IsCanceled, Is.True);
        Assert.That(pool.GetSnapshot().Waiting, Is.EqualTo(0));
    }

    [Test]
    public async Task AcquireBlocking_Cancelled_Throws()
    {
        var pool = SingleChannelPool();
        await pool.WarmUpAsync().Within();
        using var held = pool.Acquire();
        using var cancellation = new CancellationTokenSource();

        var blocked = Task.Factory.StartNew(() => pool.Acquire(cancellation.Token), TaskCreationOptions.LongRunning);
        await Eventually.That(() => pool.GetSnapshot().Waiting == 1, "the blocking caller waits");
        await cancellation.CancelAsync();

        Assert.ThrowsAsync<OperationCanceledException>(() => blocked.Within());
    }

    [Test]
    public async Task Waiters_AreServedInArrivalOrder()
    {
        var pool = SingleChannelPool();
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        var served = new List<string>();
        async Task Wait(string name)
        {
            await using var lease = await pool.AcquireAsync();
            lock (served)
            {
                served.Add(name);
            }
        }

        var first = Wait("first");
        var second = Wait("second");
        var third = Wait("third");
        Assert.That(pool.GetSnapshot().Waiting, Is.EqualTo(3));

        held.Dispose();
        await Task.WhenAll(first, second, third).Within();

        Assert.That(served, Is.EqualTo(new[] { "first", "second", "third" }));
    }

    [Test]
    public async Task Waiter_GetsAReleasedChannel_WhenItComesBeforeTheOpen()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxChannels = 2;
        });
        await pool.WarmUpAsync().Within();
        Factory.HoldOpens();
        var held = await pool.AcquireAsync();
        var heldChannel = held.Channel;

        var waiting = pool.AcquireAsync().AsTask();
        await Eventually.That(() => Factory.OpensInFlight == 1, "an open for the waiter is in flight");
        held.Dispose();

        await using var lease = await waiting.Within();
        Assert.That(lease.Channel, Is.SameAs(heldChannel));
        Factory.StopHoldingOpens();
        await UntilIdle(pool, 1);
    }

    [Test]
    public async Task Waiter_GetsANewlyOpenedChannel_WhenItComesBeforeARelease()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxChannels = 2;
        });
        await pool.WarmUpAsync().Within();
        Factory.HoldOpens();
        await using var held = await pool.AcquireAsync();

        var waiting = pool.AcquireAsync().AsTask();
        await Eventually.That(() => Factory.OpensInFlight == 1, "an open for the waiter is in flight");
        Factory.AllowOpens(1);

        await using var lease = await waiting.Within();
        Assert.That(lease.Channel, Is.Not.SameAs(held.Channel));
        Assert.That(lease.Channel.Id, Is.EqualTo(2));
    }

    [Test]
    public async Task AcquireBlocking_IsWokenDirectlyByARelease()
    {
        var pool = SingleChannelPool();
        await pool.WarmUpAsync().Within();
        var held = pool.Acquire();
        var channel = held.Channel;
        FakeChannel? received = null;

        var thread = new Thread(() =>
        {
            using var lease = pool.Acquire();
            received = lease.Channel;
        });
        thread.Start();
        await Eventually.That(() => pool.GetSnapshot().Waiting == 1, "the blocking caller waits");
        held.Dispose();

        Assert.That(thread.Join(Eventually.Limit), Is.True);
        Assert.That(received, Is.SameAs(channel));
    }

    [Test]
    public async Task RecycledWaiter_OnTheSystemClock_StillTimesOut_AndServesAgainAfterItsTimeoutFired()
    {
        // A waiter keeps its timeout source across waits (reset, not reallocated); only the system clock's timers can
        // be reset, so this runs in real time, briefly.
        var options = SmallPool(poolSize: 1, maxChannels: 1);
        options.RefillThreshold = 0;
        options.AcquireTimeout = TimeSpan.FromMilliseconds(100);
        var pool = CreatePool(options, TimeProvider.System);
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync().Within();
        for (var i = 0; i < 3; i++)
        {
            var waiting = pool.AcquireAsync();
            held.Dispose();
            held = await waiting.AsTask().Within();
        }

        Assert.ThrowsAsync<ChannelPoolTimeoutException>(async () => await pool.AcquireAsync().AsTask().Within());

        var next = pool.AcquireAsync();
        held.Dispose();
        held = await next.AsTask().Within();
        Assert.That(held.IsActive, Is.True, "the waiter whose timeout fired was replaced, not reused with a cancelled source");
        held.Dispose();
    }
}
