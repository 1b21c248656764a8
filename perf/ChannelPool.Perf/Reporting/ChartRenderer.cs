using System.Globalization;
using ScottPlot;
using ScottPlot.TickGenerators;

namespace ChannelPool.Perf.Reporting;

/// <summary>What <see cref="ChartRenderer.RenderAsync"/> wrote.</summary>
/// <param name="Written">The PNG of every chart drawn (<c>&lt;Name&gt;.png</c>, with <c>&lt;Name&gt;.svg</c> beside it), in chart order.</param>
/// <param name="Problem">Why some or all charts were not drawn, or <see langword="null"/> when every chart was.</param>
internal sealed record ChartRenderResult(IReadOnlyList<string> Written, string? Problem);

/// <summary>Draws <see cref="Chart"/>s in-process with ScottPlot, as PNG and SVG.</summary>
internal static class ChartRenderer
{
    public const int Width = 900;
    public const int Height = 500;

    /// <summary>Builds the ScottPlot plot of <paramref name="chart"/>.</summary>
    /// <exception cref="ArgumentException">The chart has no usable name or points; the message names the chart and the problem.</exception>
    public static Plot ToPlot(Chart chart)
    {
        Validate(chart);
        var plot = new Plot();
        plot.Title(chart.Title);
        plot.XLabel(chart.XTitle);
        plot.YLabel(chart.YTitle);
        var palette = new ScottPlot.Palettes.Category10();

        // Series and categories keep the order the report measured them in, not alphabetical.
        var series = chart.Points.Select(p => p.Series).Distinct().ToList();
        double Y(double value) => chart.LogScaleY ? Math.Log10(value) : value;
        if (chart.Kind == ChartKind.GroupedBar)
        {
            var categories = chart.Points.Select(p => p.Category).Distinct().ToList();
            var groupWidth = series.Count + 1;

            // On a log axis a bar rises from the decade below the smallest value, not from 10^0.
            var baseline = chart.LogScaleY ? Math.Floor(chart.Points.Min(p => Y(p.Y))) : 0;
            for (var s = 0; s < series.Count; s++)
            {
                var color = palette.GetColor(s);
                var bars = chart.Points.Where(p => p.Series == series[s]).Select(p => new Bar
                {
                    Position = (categories.IndexOf(p.Category) * groupWidth) + s,
                    Value = Y(p.Y),
                    ValueBase = baseline,
                    FillColor = color,
                }).ToList();
                plot.Add.Bars(bars).LegendText = series[s];
            }

            plot.Axes.Bottom.TickGenerator = new NumericManual(
                [.. categories.Select((_, c) => (c * groupWidth) + ((series.Count - 1) / 2.0))], [.. categories]);
            plot.Axes.Margins(bottom: 0);
        }
        else
        {
            for (var s = 0; s < series.Count; s++)
            {
                var points = chart.Points.Where(p => p.Series == series[s]).ToList();
                var line = plot.Add.Scatter(points.Select(p => p.X).ToArray(), points.Select(p => Y(p.Y)).ToArray(), palette.GetColor(s));
                line.LegendText = series[s];
                line.MarkerSize = 7;
            }
        }

        if (chart.LogScaleY)
        {
            plot.Axes.Left.TickGenerator = new NumericAutomatic
            {
                MinorTickGenerator = new LogMinorTickGenerator(),
                IntegerTicksOnly = true,
                LabelFormatter = y => Math.Pow(10, y).ToString("G4", CultureInfo.InvariantCulture),
            };
        }

        plot.ShowLegend(Alignment.UpperLeft);
        return plot;
    }

    /// <summary>Draws every chart as <c>&lt;Name&gt;.png</c> and <c>&lt;Name&gt;.svg</c> in <paramref name="outputDirectory"/>.</summary>
    /// <exception cref="ArgumentException">A chart is invalid or two charts share a name; the message names the chart and the problem.</exception>
    public static async Task<ChartRenderResult> RenderAsync(IReadOnlyList<Chart> charts, string outputDirectory, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(charts);
        ArgumentException.ThrowIfNullOrWhiteSpace(outputDirectory);
        foreach (var chart in charts)
        {
            Validate(chart);
        }

        var duplicate = charts.GroupBy(chart => chart.Name, StringComparer.OrdinalIgnoreCase).FirstOrDefault(group => group.Count() > 1);
        if (duplicate is not null)
        {
            throw new ArgumentException($"Two charts are named '{duplicate.Key}'; each chart needs its own name because it is its file name.", nameof(charts));
        }

        outputDirectory = Path.GetFullPath(outputDirectory);
        Directory.CreateDirectory(outputDirectory);
        var written = new List<string>(charts.Count);
        foreach (var chart in charts)
        {
            cancellationToken.ThrowIfCancellationRequested();
            var png = Path.Combine(outputDirectory, chart.Name + ".png");
            try
            {
                var plot = ToPlot(chart);
                await File.WriteAllBytesAsync(png, plot.GetImageBytes(Width, Height, ImageFormat.Png), cancellationToken);
                await File.WriteAllTextAsync(Path.ChangeExtension(png, ".svg"), plot.GetSvgXml(Width, Height), cancellationToken);
            }
            catch (Exception exception) when (exception is DllNotFoundException or TypeInitializationException)
            {
                // SkiaSharp's native library did not load (an unusual OS or architecture): the tables still stand.
                return new ChartRenderResult(written, $"ScottPlot could not draw '{chart.Name}': {exception.GetBaseException().Message}");
            }

            written.Add(png);
        }

        return new ChartRenderResult(written, null);
    }

    private static void Validate(Chart chart)
    {
        ArgumentNullException.ThrowIfNull(chart);
        if (string.IsNullOrWhiteSpace(chart.Name))
        {
            throw new ArgumentException($"The chart titled '{chart.Title}' has an empty name; give it a file name such as 'proxies-throughput'.", nameof(chart));
        }

        if (chart.Name.IndexOfAny(['/', '\\', ':', .. Path.GetInvalidFileNameChars()]) >= 0 || chart.Name.Trim('.').Length == 0)
        {
            throw new ArgumentException($"The chart name '{chart.Name}' contains path characters; it must be a plain file name without extension, such as 'proxies-throughput'.", nameof(chart));
        }

        if (chart.Points is null || chart.Points.Count == 0)
        {
            throw new ArgumentException($"The chart '{chart.Name}' has no points; leave it out of the report or give it data.", nameof(chart));
        }

        foreach (var point in chart.Points)
        {
            if (!double.IsFinite(point.Y))
            {
                throw new ArgumentException($"The chart '{chart.Name}' has a Y value of {point.Y} (not finite) for series '{point.Series}' at {Where(chart, point)}.", nameof(chart));
            }

            if (chart.Kind == ChartKind.Line && !double.IsFinite(point.X))
            {
                throw new ArgumentException($"The chart '{chart.Name}' has an X value of {point.X} (not finite) for series '{point.Series}'.", nameof(chart));
            }

            if (chart.LogScaleY && point.Y <= 0)
            {
                throw new ArgumentException($"The chart '{chart.Name}' has a log-scale y axis but a Y value of {point.Y} (not positive) for series '{point.Series}' at {Where(chart, point)}; a log scale cannot show zero or negative values.", nameof(chart));
            }
        }
    }

    private static string Where(Chart chart, ChartPoint point) =>
        chart.Kind == ChartKind.GroupedBar ? $"category '{point.Category}'" : $"x = {point.X}";
}
