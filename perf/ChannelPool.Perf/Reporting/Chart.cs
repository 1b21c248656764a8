namespace ChannelPool.Perf.Reporting;

/// <summary>How a chart draws its points.</summary>
internal enum ChartKind
{
    /// <summary>Bars, one group per <see cref="ChartPoint.Category"/>, one bar per series within it.</summary>
    GroupedBar,

    /// <summary>Lines over a numeric x axis (<see cref="ChartPoint.X"/>), one line per series.</summary>
    Line,
}

/// <summary>One value in a chart.</summary>
/// <param name="Series">The series (colour) it belongs to, for example <c>pooled reuse</c>.</param>
/// <param name="Category">The x category of a bar chart, for example <c>concurrency 8</c>; ignored by line charts.</param>
/// <param name="X">The x value of a line chart; ignored by bar charts.</param>
/// <param name="Y">The value.</param>
internal sealed record ChartPoint(string Series, string Category, double X, double Y);

/// <summary>A chart for the report, drawn by <see cref="ChartRenderer"/>.</summary>
/// <param name="Name">The file name without extension, for example <c>proxies-throughput</c>.</param>
/// <param name="Title">The chart's title.</param>
/// <param name="Kind">Bars or lines.</param>
/// <param name="XTitle">The x axis title.</param>
/// <param name="YTitle">The y axis title, with its unit.</param>
/// <param name="Points">The values.</param>
/// <param name="LogScaleY">Whether the y axis is logarithmic, for values spanning orders of magnitude.</param>
internal sealed record Chart(string Name, string Title, ChartKind Kind, string XTitle, string YTitle, IReadOnlyList<ChartPoint> Points, bool LogScaleY = false);
