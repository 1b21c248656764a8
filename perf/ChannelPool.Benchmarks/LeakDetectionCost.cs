using System.Runtime.CompilerServices;
using BenchmarkDotNet.Attributes;

namespace ChannelPool.Benchmarks;

/// <summary>
/// What leak detection costs a lease: the same lease+release on a warm pool with <c>LeakDetectionThreshold</c> unset
/// (the baseline, and the default) and set. On, every lease captures its caller's stack (without file and line
/// lookups) and allocates a watch for the leak scan. The caller sits a few frames deep, as application code does.
/// </summary>
[MemoryDiagnoser]
public class LeakDetectionCost
{
    private DefaultChannelPool<BenchChannel> _off = null!;
    private DefaultChannelPool<BenchChannel> _on = null!;

    [GlobalSetup]
    public void Setup()
    {
        _off = BenchPools.CreateWarm();
        _on = BenchPools.CreateWarm(leakDetectionThreshold: TimeSpan.FromMinutes(5));
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _off.Dispose();
        _on.Dispose();
    }

    [Benchmark(Baseline = true, Description = "Acquire+Release, leak detection off")]
    public BenchChannel Off() => Caller.Depth3(_off);

    [Benchmark(Description = "Acquire+Release, leak detection on")]
    public BenchChannel On() => Caller.Depth3(_on);

    private static class Caller
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static BenchChannel Depth3(DefaultChannelPool<BenchChannel> pool) => Depth2(pool);

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static BenchChannel Depth2(DefaultChannelPool<BenchChannel> pool) => Depth1(pool);

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static BenchChannel Depth1(DefaultChannelPool<BenchChannel> pool)
        {
            var lease = pool.Acquire();
            var channel = lease.Channel;
            lease.Dispose();
            return channel;
        }
    }
}
