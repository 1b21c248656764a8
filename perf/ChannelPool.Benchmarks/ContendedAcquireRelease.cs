using BenchmarkDotNet.Attributes;
using Microsoft.Extensions.ObjectPool;

namespace ChannelPool.Benchmarks;

/// <summary>
/// Several threads leasing and releasing on one warm pool at once. Each invocation runs
/// <see cref="OperationsPerThread"/> lease+release pairs on every thread; the reported time is per pair.
/// </summary>
[MemoryDiagnoser]
public class ContendedAcquireRelease
{
    private const int OperationsPerThread = 20_000;

    private DefaultObjectPool<BenchChannel> _objectPool = null!;
    private LockQueuePool _lockQueue = null!;
    private DefaultChannelPool<BenchChannel> _pool = null!;
    private ParallelOptions _parallel = null!;

    [Params(2, 4)]
    public int Threads { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        _objectPool = new DefaultObjectPool<BenchChannel>(new DefaultPooledObjectPolicy<BenchChannel>(), BenchPools.PoolSize);
        _lockQueue = new LockQueuePool(BenchPools.PoolSize);
        _pool = BenchPools.CreateWarm();
        _parallel = new ParallelOptions { MaxDegreeOfParallelism = Threads };
        ThreadPool.SetMinThreads(Threads * 2, Threads * 2);
    }

    [GlobalCleanup]
    public void Cleanup() => _pool.Dispose();

    [Benchmark(Baseline = true, OperationsPerInvoke = OperationsPerThread, Description = "DefaultObjectPool Get+Return (floor)")]
    public void ObjectPool_GetReturn() => OnEveryThread(() =>
    {
        for (var i = 0; i < OperationsPerThread; i++)
        {
            _objectPool.Return(_objectPool.Get());
        }
    });

    [Benchmark(OperationsPerInvoke = OperationsPerThread, Description = "lock+Queue pool Rent+Return (naive peer)")]
    public void LockQueue_RentReturn() => OnEveryThread(() =>
    {
        for (var i = 0; i < OperationsPerThread; i++)
        {
            _lockQueue.Return(_lockQueue.Rent());
        }
    });

    [Benchmark(OperationsPerInvoke = OperationsPerThread, Description = "ChannelPool AcquireAsync+Release")]
    public void ChannelPool_AcquireAsyncRelease() => OnEveryThread(() =>
    {
        for (var i = 0; i < OperationsPerThread; i++)
        {
            // A warm pool of 64 never runs dry here, so every acquire completes synchronously.
            var acquire = _pool.AcquireAsync();
            acquire.Result.Dispose();
        }
    });

    // Every thread runs the same loop; time per invocation therefore reads as time per pair on each thread.
    private void OnEveryThread(Action loop) => Parallel.For(0, Threads, _parallel, _ => loop());
}
