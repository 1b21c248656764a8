using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.ObjectPool;

namespace ChannelPool.Benchmarks;

/// <summary>
/// The same lease+release loops as the BenchmarkDotNet classes, timed in many short rounds that alternate between the
/// contenders in one process, so a burst of load from elsewhere on a shared machine hits every contender alike.
/// Reports, per contender, the median, the 10th percentile and the minimum time per pair, and each as a ratio to the
/// floor's. Run: <c>dotnet run -c Release --project perf/ChannelPool.Benchmarks -- interleaved [threads]</c>.
/// </summary>
/// <remarks>
/// BenchmarkDotNet runs one benchmark after another, each in its own process, so on a machine other work keeps busy
/// the floor and the pool are measured under different loads and their ratio swings with it. Here they are not.
/// </remarks>
internal static class Interleaved
{
    private const int PairsPerRound = 200_000;

    public static void Run(int threads)
    {
        var objectPool = new DefaultObjectPool<BenchChannel>(new DefaultPooledObjectPolicy<BenchChannel>(), BenchPools.PoolSize);
        var lockQueue = new LockQueuePool(BenchPools.PoolSize);
        using var pool = BenchPools.CreateWarm();
        using var adaptive = BenchPools.CreateWarm(idleTarget: IdleTargetMode.Adaptive);
        (string Name, Action Loop)[] contenders =
        [
            ("DefaultObjectPool Get+Return (floor)", () => Floor(objectPool)),
            ("lock+Queue pool Rent+Return (naive peer)", () => Naive(lockQueue)),
            ("ChannelPool AcquireAsync+Release", () => AcquireAsync(pool)),
            ("ChannelPool Acquire+Release", () => Acquire(pool)),
            ("ChannelPool AcquireAsync+Release, adaptive idle target", () => AcquireAsync(adaptive)),
        ];

        // Single-threaded rounds are short, so more of them; the first few are warm-up (tiering) and are dropped.
        var rounds = threads == 1 ? 300 : 60;
        var warmUp = threads == 1 ? 20 : 5;
        var perPair = contenders.Select(_ => new List<double>()).ToArray();
        for (var round = 0; round < rounds; round++)
        {
            for (var k = 0; k < contenders.Length; k++)
            {
                var elapsed = Time(contenders[k].Loop, threads);
                if (round >= warmUp)
                {
                    perPair[k].Add(elapsed.TotalNanoseconds / PairsPerRound);
                }
            }
        }

        var floor = Summary(perPair[0]);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{threads} thread(s), {rounds - warmUp} rounds of {PairsPerRound:N0} pairs per thread; ns per pair, and ratio to the floor"));
        Console.WriteLine("| Contender | Median | P10 | Min | Ratio (median) | Ratio (P10) | Ratio (min) |");
        Console.WriteLine("|---|---:|---:|---:|---:|---:|---:|");
        for (var k = 0; k < contenders.Length; k++)
        {
            var s = Summary(perPair[k]);
            Console.WriteLine(string.Create(
                CultureInfo.InvariantCulture,
                $"| {contenders[k].Name} | {s.Median:F2} | {s.P10:F2} | {s.Min:F2} | {s.Median / floor.Median:F2} | {s.P10 / floor.P10:F2} | {s.Min / floor.Min:F2} |"));
        }
    }

    private static TimeSpan Time(Action loop, int threads)
    {
        var started = Stopwatch.GetTimestamp();
        if (threads == 1)
        {
            loop();
        }
        else
        {
            var workers = Enumerable.Range(0, threads).Select(_ => new Thread(() => loop())).ToArray();
            Array.ForEach(workers, w => w.Start());
            Array.ForEach(workers, w => w.Join());
        }

        return Stopwatch.GetElapsedTime(started);
    }

    private static (double Median, double P10, double Min) Summary(List<double> values)
    {
        var sorted = values.Order().ToArray();
        return (sorted[sorted.Length / 2], sorted[sorted.Length / 10], sorted[0]);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Floor(DefaultObjectPool<BenchChannel> pool)
    {
        for (var i = 0; i < PairsPerRound; i++)
        {
            pool.Return(pool.Get());
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Naive(LockQueuePool pool)
    {
        for (var i = 0; i < PairsPerRound; i++)
        {
            pool.Return(pool.Rent());
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void AcquireAsync(DefaultChannelPool<BenchChannel> pool)
    {
        for (var i = 0; i < PairsPerRound; i++)
        {
            // A warm pool of 64 never runs dry here, so every acquire completes synchronously.
            var acquire = pool.AcquireAsync();
            var lease = acquire.IsCompletedSuccessfully ? acquire.Result : acquire.AsTask().GetAwaiter().GetResult();
            _ = lease.Channel;
            lease.Dispose();
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Acquire(DefaultChannelPool<BenchChannel> pool)
    {
        for (var i = 0; i < PairsPerRound; i++)
        {
            var lease = pool.Acquire();
            _ = lease.Channel;
            lease.Dispose();
        }
    }
}
