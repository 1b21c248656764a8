using System.Diagnostics;

namespace ChannelPool.Perf.Stats;

/// <summary>Collects latencies from many threads; <see cref="Summarize"/> turns them into the figures the report shows.</summary>
internal sealed class LatencyRecorder
{
    private readonly Lock _lock = new();
    private readonly List<long> _ticks;

    public LatencyRecorder(int expected = 1024) => _ticks = new List<long>(expected);

    public int Count
    {
        get
        {
            using (_lock.EnterScope())
            {
                return _ticks.Count;
            }
        }
    }

    /// <summary>Records the time since <paramref name="startTimestamp"/> (a <see cref="Stopwatch.GetTimestamp"/> value).</summary>
    public void RecordSince(long startTimestamp) => Record(Stopwatch.GetTimestamp() - startTimestamp);

    /// <summary>Records one latency, in <see cref="Stopwatch"/> ticks.</summary>
    public void Record(long ticks)
    {
        using (_lock.EnterScope())
        {
            _ticks.Add(Math.Max(0, ticks));
        }
    }

    public LatencySummary Summarize()
    {
        long[] sorted;
        using (_lock.EnterScope())
        {
            sorted = [.. _ticks];
        }

        return LatencySummary.From(sorted);
    }
}

/// <summary>A latency distribution, in milliseconds.</summary>
internal sealed record LatencySummary(int Count, double MeanMs, double MedianMs, double StdevMs, double P50Ms, double P95Ms, double P99Ms, double MaxMs)
{
    public static LatencySummary Empty { get; } = new(0, 0, 0, 0, 0, 0, 0, 0);

    /// <summary>Summarizes <paramref name="ticks"/> (Stopwatch ticks), sorting the array in place.</summary>
    public static LatencySummary From(long[] ticks)
    {
        if (ticks.Length == 0)
        {
            return Empty;
        }

        Array.Sort(ticks);
        var toMs = 1000.0 / Stopwatch.Frequency;
        double sum = 0;
        foreach (var t in ticks)
        {
            sum += t;
        }

        var mean = sum / ticks.Length;
        double squares = 0;
        foreach (var t in ticks)
        {
            squares += (t - mean) * (t - mean);
        }

        var stdev = ticks.Length > 1 ? Math.Sqrt(squares / (ticks.Length - 1)) : 0;
        // Nearest-rank percentile: the smallest value with at least that fraction of values at or below it.
        double At(double quantile) => ticks[Math.Clamp((int)Math.Ceiling(quantile * ticks.Length) - 1, 0, ticks.Length - 1)] * toMs;
        return new LatencySummary(ticks.Length, mean * toMs, At(0.5), stdev * toMs, At(0.5), At(0.95), At(0.99), ticks[^1] * toMs);
    }
}
