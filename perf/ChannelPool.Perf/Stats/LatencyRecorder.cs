using System.Diagnostics;
using HdrHistogram;

namespace ChannelPool.Perf.Stats;

/// <summary>
/// Collects latencies from many threads into an HdrHistogram: constant memory however many samples a run takes, and
/// percentiles to three significant digits. <see cref="Summarize"/> turns it into the figures the report shows.
/// </summary>
internal sealed class LatencyRecorder
{
    // Stopwatch ticks up to an hour; a longer latency is recorded as an hour, which no scenario comes near.
    private static readonly long Highest = Stopwatch.Frequency * 3600;

    private readonly LongConcurrentHistogram _histogram = new(1, Highest, 3);

    public int Count => (int)_histogram.TotalCount;

    /// <summary>Records the time since <paramref name="startTimestamp"/> (a <see cref="Stopwatch.GetTimestamp"/> value).</summary>
    public void RecordSince(long startTimestamp) => Record(Stopwatch.GetTimestamp() - startTimestamp);

    /// <summary>Records one latency, in <see cref="Stopwatch"/> ticks.</summary>
    public void Record(long ticks) => _histogram.RecordValue(Math.Clamp(ticks, 0, Highest));

    /// <summary>
    /// Summarizes what was recorded so far. Late samples may still arrive (a broadcast's stragglers), and HdrHistogram's
    /// iterators refuse a histogram that changes under them, so this reads a copy.
    /// </summary>
    public LatencySummary Summarize() => LatencySummary.From(_histogram.Copy());
}

/// <summary>A latency distribution, in milliseconds.</summary>
internal sealed record LatencySummary(int Count, double MeanMs, double MedianMs, double StdevMs, double P50Ms, double P95Ms, double P99Ms, double MaxMs)
{
    public static LatencySummary Empty { get; } = new(0, 0, 0, 0, 0, 0, 0, 0);

    /// <summary>Summarizes <paramref name="histogram"/>, whose values are <see cref="Stopwatch"/> ticks.</summary>
    public static LatencySummary From(HistogramBase histogram)
    {
        var count = histogram.TotalCount;
        if (count == 0)
        {
            return Empty;
        }

        var toMs = 1000.0 / Stopwatch.Frequency;

        // HdrHistogram gives the population deviation; the report has always shown the sample one.
        var stdev = count > 1 ? histogram.GetStdDeviation() * Math.Sqrt(count / (count - 1.0)) : 0;
        double At(double percentile) => histogram.GetValueAtPercentile(percentile) * toMs;
        return new LatencySummary((int)count, histogram.GetMean() * toMs, At(50), stdev * toMs, At(50), At(95), At(99), histogram.GetMaxValue() * toMs);
    }
}
