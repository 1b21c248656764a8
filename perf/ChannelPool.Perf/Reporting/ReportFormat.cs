using System.Globalization;

namespace ChannelPool.Perf.Reporting;

/// <summary>
/// How every scenario writes its figures, on the console and in the report: in the invariant culture, so that a report
/// reads the same on every machine and diffs cleanly against the one before it.
/// </summary>
internal static class ReportFormat
{
    /// <summary>A figure in a .NET numeric format: <c>N0</c> (the default) for counts and rates, <c>0.0</c> for milliseconds.</summary>
    public static string Num(double value, string format = "N0") => value.ToString(format, CultureInfo.InvariantCulture);

    /// <summary>A ratio to a peer or a floor, as the targets state them: <c>0.97×</c>.</summary>
    public static string Ratio(double value) => value.ToString("0.00×", CultureInfo.InvariantCulture);

    /// <summary>A share of a baseline: <c>97 %</c>.</summary>
    public static string Percent(double value) => value.ToString("P0", CultureInfo.InvariantCulture);
}
