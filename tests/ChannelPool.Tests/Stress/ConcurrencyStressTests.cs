namespace ChannelPool.Tests.Stress;

/// <summary>
/// Many callers acquire and release at once while fake time races ahead on another thread, so channels expire, the
/// cleanup timer runs and refills start in the middle of it all. Some callers block, some break or fault channels.
/// </summary>
public class ConcurrencyStressTests : PoolTestBase
{
    private const int AsyncCallers = 12;
    private const int BlockingCallers = 4;
    private const int Iterations = 1500;

    [Test]
    public async Task ManyCallers_NeverShareAChannel_CountsBalance_AndNothingLeaks()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 6;
            o.MaxChannels = 10;
            o.RefillThreshold = 3;
            o.ChannelLifetime = TimeSpan.FromSeconds(2);
            o.CleanupInterval = TimeSpan.FromMilliseconds(500);
            o.AcquireTimeout = Timeout.InfiniteTimeSpan;
        });
        await pool.WarmUpAsync().Within();
        var sharedUse = 0;
        var unbalanced = new List<ChannelPoolSnapshot>();
        using var stop = new CancellationTokenSource();

        var ticker = Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                Time.Advance(TimeSpan.FromMilliseconds(50));
                var s = pool.GetSnapshot();
                if (s.TotalOpened != s.Idle + s.Leased + s.Closing + s.TotalClosed)
                {
                    lock (unbalanced)
                    {
                        unbalanced.Add(s);
                    }
                }

                await Task.Delay(1);
            }
        });

        void Use(ChannelLease<FakeChannel> lease, Random random)
        {
            var channel = lease.Channel;
            if (!channel.TryBeginUse())
            {
                Interlocked.Increment(ref sharedUse);
            }

            switch (random.Next(100))
            {
                case 0:
                    lease.MarkBroken();
                    break;
                case 1:
                    channel.Fault();
                    break;
            }

            channel.EndUse();
        }

        var asyncCallers = Enumerable.Range(0, AsyncCallers).Select(seed => Task.Run(async () =>
        {
            var random = new Random(seed);
            for (var i = 0; i < Iterations; i++)
            {
                await using var lease = await pool.AcquireAsync();
                Use(lease, random);
                if (random.Next(4) == 0)
                {
                    await Task.Yield();
                }
            }
        }));
        var blockingCallers = Enumerable.Range(100, BlockingCallers).Select(seed => Task.Factory.StartNew(
            () =>
            {
                var random = new Random(seed);
                for (var i = 0; i < Iterations; i++)
                {
                    using var lease = pool.Acquire();
                    Use(lease, random);
                }
            },
            TaskCreationOptions.LongRunning));

        await Task.WhenAll(asyncCallers.Concat(blockingCallers)).WaitAsync(TimeSpan.FromMinutes(2));
        await stop.CancelAsync();
        await ticker;
        await UntilQuiet(pool);

        var end = pool.GetSnapshot();
        Assert.That(sharedUse, Is.EqualTo(0), "no channel was leased to two callers at once");
        Assert.That(unbalanced, Is.Empty, "opened = idle + leased + closing + closed at every sample");
        Assert.That(end is { Leased: 0, Waiting: 0 }, Is.True, end.ToString());
        Assert.That(end.TotalOpened, Is.EqualTo(end.Idle + end.TotalClosed), "opened = idle + leased + closed");
        Assert.That(end.TotalOpened, Is.EqualTo(Factory.Opened));
        Assert.That(Factory.OpenChannels, Has.Count.EqualTo(end.Idle));
        Assert.That(end.TotalClosed, Is.GreaterThan(0), "lifetimes, breaks and faults retired channels during the run");

        await pool.DisposeAsync();
        Assert.That(Factory.OpenChannels, Is.Empty, "nothing leaked");
        Assert.That(Factory.Channels, Has.All.Matches<FakeChannel>(c => c.EndCalls == 1));
    }
}
