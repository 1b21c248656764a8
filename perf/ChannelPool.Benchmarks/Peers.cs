using ChannelPool;

namespace ChannelPool.Benchmarks;

/// <summary>A channel with nothing behind it: the benchmarks measure the pool, not a transport.</summary>
public sealed class BenchChannel
{
    public bool Faulted { get; set; }
}

/// <summary>Opens synchronously and completes at once, so warm-up is quick and the hot path is all that is measured.</summary>
public sealed class BenchChannelFactory : IPooledChannelFactory<BenchChannel>
{
    public ValueTask<BenchChannel> OpenAsync(CancellationToken cancellationToken) => ValueTask.FromResult(new BenchChannel());

    public bool IsUsable(BenchChannel channel) => !channel.Faulted;

    public ValueTask CloseAsync(BenchChannel channel, CancellationToken cancellationToken) => ValueTask.CompletedTask;

    public void Abort(BenchChannel channel)
    {
    }
}

/// <summary>
/// The naive peer: what many hand-written channel pools are, a lock around a queue. No waiting, no lifetime, no
/// health check, no telemetry.
/// </summary>
public sealed class LockQueuePool
{
    private readonly Lock _lock = new();
    private readonly Queue<BenchChannel> _idle = new();

    public LockQueuePool(int size)
    {
        for (var i = 0; i < size; i++)
        {
            _idle.Enqueue(new BenchChannel());
        }
    }

    public BenchChannel Rent()
    {
        lock (_lock)
        {
            return _idle.Count > 0 ? _idle.Dequeue() : new BenchChannel();
        }
    }

    public void Return(BenchChannel channel)
    {
        lock (_lock)
        {
            _idle.Enqueue(channel);
        }
    }
}

internal static class BenchPools
{
    public const int PoolSize = 64;

    /// <summary>A warm pool whose channels outlive the run, so only lease and release are measured.</summary>
    /// <param name="leakDetectionThreshold">Turns leak detection on; off (the default) unless set.</param>
    /// <param name="idleTarget">Fixed (the default) or adaptive.</param>
    public static DefaultChannelPool<BenchChannel> CreateWarm(
        TimeSpan? leakDetectionThreshold = null, IdleTargetMode idleTarget = IdleTargetMode.Fixed, LeaseSharing sharing = LeaseSharing.Always)
    {
        var pool = new DefaultChannelPool<BenchChannel>(
            new BenchChannelFactory(),
            new ChannelPoolOptions
            {
                Name = "bench",
                PoolSize = PoolSize,
                MaxChannels = 126,
                ChannelLifetime = TimeSpan.FromHours(12),
                LeakDetectionThreshold = leakDetectionThreshold,
                IdleTarget = { Mode = idleTarget },
                MaxLeasesPerChannel = sharing == LeaseSharing.Adaptive ? 64 : 1,
                LeaseSharing = sharing,
            });
        pool.WarmUpAsync().GetAwaiter().GetResult();
        return pool;
    }
}
