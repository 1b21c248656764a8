using System.Globalization;
using ChannelPool.Perf.Reporting;

namespace ChannelPool.Perf.Stats;

/// <summary>
/// The ratio of two kinds' figures measured in the same rounds (calls per second, CPU per delivery): one ratio per round,
/// from two turns that ran next to each other in time, and their median with the middle half of them as the spread. A shared machine's load
/// drifts by more than the kinds differ; within one round both kinds see about the same load, so the drift cancels
/// in each round's ratio, and the median drops the rounds a burst of other work landed in.
/// </summary>
/// <param name="Median">The median of the rounds' ratios.</param>
/// <param name="Low">The first quartile of the rounds' ratios.</param>
/// <param name="High">The third quartile of the rounds' ratios.</param>
/// <param name="Rounds">How many rounds the ratio is taken over.</param>
internal readonly record struct PairedRatio(double Median, double Low, double High, int Rounds)
{
    /// <summary>Pairs the figures of two kinds round by round.</summary>
    /// <param name="rates">The figures of the kind on top, one per round.</param>
    /// <param name="baselineRates">The figures of the kind below, one per round, in the same order.</param>
    /// <returns>The paired ratio, or <see langword="null"/> when the rounds do not pair up or a baseline round made no call.</returns>
    public static PairedRatio? Of(IReadOnlyList<double> rates, IReadOnlyList<double> baselineRates)
    {
        if (rates.Count == 0 || rates.Count != baselineRates.Count || baselineRates.Any(rate => rate <= 0))
        {
            return null;
        }

        var ratios = rates.Zip(baselineRates, (rate, baseline) => rate / baseline).Order().ToArray();
        return new PairedRatio(Quantile(ratios, 0.5), Quantile(ratios, 0.25), Quantile(ratios, 0.75), ratios.Length);
    }

    /// <summary>The median of the finite values, or NaN when there are none.</summary>
    public static double MedianOf(IEnumerable<double> values) => values.Where(double.IsFinite).Order().ToList() is { Count: > 0 } sorted ? Quantile(sorted, 0.5) : double.NaN;

    /// <summary>The <paramref name="q"/> quantile of sorted values, interpolated between the two nearest (as R's type 7 and Excel's PERCENTILE do).</summary>
    /// <param name="sorted">Values in ascending order, at least one.</param>
    /// <param name="q">From 0 to 1.</param>
    public static double Quantile(IReadOnlyList<double> sorted, double q)
    {
        var position = (sorted.Count - 1) * q;
        var below = (int)Math.Floor(position);
        var above = Math.Min(below + 1, sorted.Count - 1);
        return sorted[below] + ((sorted[above] - sorted[below]) * (position - below));
    }

    /// <summary>Formats the median with the middle half, e.g. <c>0.98× (0.95–1.01)</c>; the median alone for one round.</summary>
    public override string ToString() =>
        Rounds > 1 ? string.Create(CultureInfo.InvariantCulture, $"{ReportFormat.Ratio(Median)} ({Low:0.00}–{High:0.00})") : ReportFormat.Ratio(Median);
}
