using BenchmarkDotNet.Attributes;

namespace ChannelPool.Benchmarks;

/// <summary>
/// The waiter path on one thread: a caller finds the one channel leased, queues, and gets it when the holder releases
/// it. Run once with an acquire timeout, which each wait arms on the waiter's recycled <see cref="CancellationTokenSource"/>, and
/// once without, to show what arming and resetting that timeout costs next to the rest of a wait.
/// </summary>
[MemoryDiagnoser]
public class WaitAndHandOver
{
    private DefaultChannelPool<BenchChannel> _timed = null!;
    private DefaultChannelPool<BenchChannel> _untimed = null!;
    private ChannelLease<BenchChannel> _timedHeld;
    private ChannelLease<BenchChannel> _untimedHeld;

    [GlobalSetup]
    public void Setup()
    {
        _timed = Create(TimeSpan.FromSeconds(30));
        _untimed = Create(Timeout.InfiniteTimeSpan);
        _timedHeld = _timed.AcquireAsync().AsTask().GetAwaiter().GetResult();
        _untimedHeld = _untimed.AcquireAsync().AsTask().GetAwaiter().GetResult();
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _timedHeld.Dispose();
        _untimedHeld.Dispose();
        _timed.Dispose();
        _untimed.Dispose();
    }

    [Benchmark(Baseline = true, Description = "wait + hand-over, AcquireTimeout 30 s (a timeout armed and reset per wait)")]
    public void Timed() => _timedHeld = WaitForHandOver(_timed, _timedHeld);

    [Benchmark(Description = "wait + hand-over, AcquireTimeout infinite (no timer)")]
    public void Untimed() => _untimedHeld = WaitForHandOver(_untimed, _untimedHeld);

    private static ChannelLease<BenchChannel> WaitForHandOver(DefaultChannelPool<BenchChannel> pool, ChannelLease<BenchChannel> held)
    {
        var waiting = pool.AcquireAsync();
        held.Dispose();

        // The release handed the channel over synchronously, so the wait has completed by now.
        return waiting.IsCompleted ? waiting.Result : throw new InvalidOperationException("The release did not reach the waiter.");
    }

    private static DefaultChannelPool<BenchChannel> Create(TimeSpan acquireTimeout)
    {
        var pool = new DefaultChannelPool<BenchChannel>(
            new BenchChannelFactory(),
            new ChannelPoolOptions
            {
                Name = "bench-wait",
                PoolSize = 1,
                MaxChannels = 1,
                RefillThreshold = 0,
                ChannelLifetime = TimeSpan.FromHours(12),
                AcquireTimeout = acquireTimeout,
            });
        pool.WarmUpAsync().GetAwaiter().GetResult();
        return pool;
    }
}
