namespace ChannelPool.Tests.Draining;

public class DrainTests : PoolTestBase
{
    [Test]
    public async Task Drain_ClosesIdleChannels_WaitsForLeases_AndClosesEachAsItComesBack()
    {
        var pool = CreatePool(o => o.PoolSize = 3);
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        var heldChannel = held.Channel;

        var drain = pool.DisposeAsync().AsTask();

        await Eventually.That(() => Factory.Channels.Count(c => c.IsClosed) == 2, "both idle channels are closed");
        Assert.That(drain.IsCompleted, Is.False, "the drain waits for the outstanding lease");
        Assert.That(heldChannel.IsOpen, Is.True, "a leased channel is left to its holder");

        held.Dispose();
        await drain.Within();

        Assert.That(heldChannel.IsClosed, Is.True, "the returned channel was closed gracefully");
        AssertNothingLeaked();
    }

    [Test]
    public async Task Drain_AbortsLeasesNotReturnedWithinTheDrainTimeout()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 2;
            o.DrainTimeout = TimeSpan.FromSeconds(5);
        });
        await pool.WarmUpAsync().Within();
        var forgotten = await pool.AcquireAsync();
        var channel = forgotten.Channel;

        var drain = pool.DrainAsync();
        await Eventually.That(() => Factory.Channels.Count(c => c.IsClosed) == Factory.Opened - 1, "every idle channel is closed");
        Time.Advance(TimeSpan.FromSeconds(5));
        await drain.Within();

        Assert.That(channel.IsAborted, Is.True);
        Assert.DoesNotThrow(forgotten.Dispose, "releasing after the drain is harmless");
        Assert.That(pool.GetSnapshot() is { Leased: 0, Idle: 0, Closing: 0 }, Is.True, pool.GetSnapshot().ToString());
        AssertNothingLeaked();
    }

    [Test]
    public async Task Drain_WhenCancelled_AbortsOutstandingLeasesAtOnce()
    {
        var pool = CreatePool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        var heldChannel = held.Channel;

        await pool.DrainAsync(new CancellationToken(canceled: true)).Within();

        Assert.That(held.IsActive, Is.False);
        Assert.That(heldChannel.IsAborted, Is.True, "the leased channel was aborted before the drain returned");
        await Eventually.That(() => Factory.OpenChannels.Count == 0, "the idle channels' graceful closes finished");
        AssertNothingLeaked();
    }

    [Test]
    public async Task Drain_FailsWaitingCallers_AndLaterCallsSayThePoolIsDisposed()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxChannels = 1;
        });
        await pool.WarmUpAsync().Within();
        var held = await pool.AcquireAsync();
        var waiting = pool.AcquireAsync().AsTask();

        var drain = pool.DrainAsync();

        var error = Assert.ThrowsAsync<ObjectDisposedException>(() => waiting.Within());
        Assert.That(error!.Message, Does.Contain($"'{pool.Name}' was disposed"));
        Assert.ThrowsAsync<ObjectDisposedException>(async () => await pool.AcquireAsync());
        Assert.Throws<ObjectDisposedException>(() => pool.Acquire());
        Assert.Throws<ObjectDisposedException>(() => pool.WarmUpAsync());
        held.Dispose();
        await drain.Within();
    }

    [Test]
    public async Task Drain_CancelsOpensInFlight_AndOpensNothingMore()
    {
        Factory.HoldOpens();
        var pool = CreatePool(o => o.PoolSize = 3);
        _ = pool.WarmUpAsync(0);
        await Eventually.That(() => Factory.OpensInFlight == 3, "three opens are in flight");

        await pool.DrainAsync().Within();

        Assert.That(Factory.OpensInFlight, Is.EqualTo(0));
        Assert.That(Factory.Opened, Is.EqualTo(0));
        Assert.That(pool.GetSnapshot().Opening, Is.EqualTo(0));
    }

    [Test]
    public async Task Drain_StopsEveryTimer_AndIsIdempotent()
    {
        var time = new TimerCountingTimeProvider();
        var pool = CreatePool(SmallPool(), time);
        await pool.WarmUpAsync().Within();
        Assert.That(time.LiveTimers, Is.GreaterThan(0));

        var first = pool.DrainAsync();
        var second = pool.DrainAsync();
        await first.Within();

        Assert.That(second, Is.SameAs(first));
        Assert.That(time.LiveTimers, Is.EqualTo(0), "every timer the pool created was disposed");
        AssertNothingLeaked();
    }

    [Test]
    public async Task Dispose_Synchronous_DrainsAsWell()
    {
        var pool = CreatePool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();

        await Task.Run(pool.Dispose).Within();

        AssertNothingLeaked();
    }

    private void AssertNothingLeaked()
    {
        Assert.That(Factory.OpenChannels, Is.Empty, "every opened channel was closed or aborted");
        Assert.That(Factory.Channels, Has.All.Matches<FakeChannel>(c => c.EndCalls == 1), "each channel was ended exactly once");
    }

    /// <summary>Microsoft's fake clock does not expose its timers; this one counts those created and not yet disposed.</summary>
    private sealed class TimerCountingTimeProvider : FakeTimeProvider
    {
        private int _liveTimers;

        public int LiveTimers => Volatile.Read(ref _liveTimers);

        public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
        {
            var timer = base.CreateTimer(callback, state, dueTime, period);
            Interlocked.Increment(ref _liveTimers);
            return new CountedTimer(timer, this);
        }

        private sealed class CountedTimer(ITimer inner, TimerCountingTimeProvider owner) : ITimer
        {
            private int _disposed;

            public bool Change(TimeSpan dueTime, TimeSpan period) => inner.Change(dueTime, period);

            public void Dispose()
            {
                if (Interlocked.Exchange(ref _disposed, 1) == 0)
                {
                    Interlocked.Decrement(ref owner._liveTimers);
                }

                inner.Dispose();
            }

            public ValueTask DisposeAsync()
            {
                Dispose();
                return ValueTask.CompletedTask;
            }
        }
    }
}
