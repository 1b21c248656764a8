using BenchmarkDotNet.Attributes;
using Microsoft.Extensions.ObjectPool;

namespace ChannelPool.Benchmarks;

/// <summary>
/// One thread leasing and releasing on a warm pool. <c>DefaultObjectPool</c> Get+Return is the floor: the least a
/// pool can cost. The target is at most 1.5x of it, clearly below the naive lock+Queue peer, allocating nothing. On a
/// busy machine, compare with <see cref="Interleaved"/>, which times the same loops side by side.
/// </summary>
[MemoryDiagnoser]
public class UncontendedAcquireRelease
{
    private DefaultObjectPool<BenchChannel> _objectPool = null!;
    private LockQueuePool _lockQueue = null!;
    private DefaultChannelPool<BenchChannel> _pool = null!;
    private DefaultChannelPool<BenchChannel> _adaptive = null!;

    [GlobalSetup]
    public void Setup()
    {
        _objectPool = new DefaultObjectPool<BenchChannel>(new DefaultPooledObjectPolicy<BenchChannel>(), BenchPools.PoolSize);
        _lockQueue = new LockQueuePool(BenchPools.PoolSize);
        _pool = BenchPools.CreateWarm();
        _adaptive = BenchPools.CreateWarm(sharing: LeaseSharing.Adaptive);
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _pool.Dispose();
        _adaptive.Dispose();
    }

    [Benchmark(Baseline = true, Description = "DefaultObjectPool Get+Return (floor)")]
    public BenchChannel ObjectPool_GetReturn()
    {
        var channel = _objectPool.Get();
        _objectPool.Return(channel);
        return channel;
    }

    [Benchmark(Description = "lock+Queue pool Rent+Return (naive peer)")]
    public BenchChannel LockQueue_RentReturn()
    {
        var channel = _lockQueue.Rent();
        _lockQueue.Return(channel);
        return channel;
    }

    // Measured without an async state machine of the benchmark's own, as the floor is: on a warm pool AcquireAsync
    // completes synchronously, and what a caller's await costs is the caller's.
    [Benchmark(Description = "ChannelPool AcquireAsync+Release")]
    public BenchChannel ChannelPool_AcquireAsyncRelease()
    {
        var acquire = _pool.AcquireAsync();
        var lease = acquire.IsCompletedSuccessfully ? acquire.Result : acquire.AsTask().GetAwaiter().GetResult();
        var channel = lease.Channel;
        lease.Dispose();
        return channel;
    }

    [Benchmark(Description = "ChannelPool Acquire+Release")]
    public BenchChannel ChannelPool_AcquireBlockingRelease()
    {
        var lease = _pool.Acquire();
        var channel = lease.Channel;
        lease.Dispose();
        return channel;
    }

    // What adaptive sharing costs one caller: every lease timed (two precise clock reads) and released through the shared path.
    [Benchmark(Description = "ChannelPool Acquire+Release, adaptive sharing")]
    public BenchChannel ChannelPool_AcquireBlockingRelease_AdaptiveSharing()
    {
        var lease = _adaptive.Acquire();
        var channel = lease.Channel;
        lease.Dispose();
        return channel;
    }
}
