using ChannelPool.Perf.Reporting;
using ScottPlot.Plottables;
using ScottPlot.TickGenerators;

namespace ChannelPool.Perf.Tests;

public class ChartRendererTests
{
    private static readonly Chart BarChart = new(
        "proxies-throughput",
        "Proxy throughput by concurrency",
        ChartKind.GroupedBar,
        "Concurrency",
        "Calls per second",
        [
            new ChartPoint("per-call channel", "concurrency 8", 0, 1250.5),
            new ChartPoint("pooled reuse", "concurrency 8", 0, 9800),
            new ChartPoint("per-call channel", "concurrency 1", 0, 410),
            new ChartPoint("pooled reuse", "concurrency 1", 0, 3100.25),
        ]);

    private static readonly Chart LineChart = new(
        "poll-latency",
        "Poll latency by subscribers",
        ChartKind.Line,
        "Subscribers",
        "p99 latency (ms)",
        [
            new ChartPoint("polling duplex", "", 1, 1.5),
            new ChartPoint("polling duplex", "", 10, 2.75),
            new ChartPoint("polling duplex", "", 100, 14),
            new ChartPoint("SignalR long polling", "", 1, 2),
            new ChartPoint("SignalR long polling", "", 10, 3.5),
            new ChartPoint("SignalR long polling", "", 100, 21),
        ],
        LogScaleY: true);

    private string _outputDirectory = null!;

    [SetUp]
    public void CreateOutputDirectory() =>
        _outputDirectory = Directory.CreateTempSubdirectory("channelpool-charts-").FullName;

    [TearDown]
    public void DeleteOutputDirectory() => Directory.Delete(_outputDirectory, recursive: true);

    [Test]
    public void ToPlot_GroupedBar_KeepsCategoriesAndSeriesInInputOrder_AndBarsSideBySide()
    {
        var plot = ChartRenderer.ToPlot(BarChart);
        plot.RenderInMemory(ChartRenderer.Width, ChartRenderer.Height); // ticks exist once the axis is laid out

        var bars = plot.GetPlottables<BarPlot>().ToList();
        Assert.That(bars.Select(b => b.LegendText), Is.EqualTo(new[] { "per-call channel", "pooled reuse" }), "series in input order");
        var ticks = plot.Axes.Bottom.TickGenerator.Ticks.Where(t => t.IsMajor).Select(t => t.Label);
        Assert.That(ticks, Is.EqualTo(new[] { "concurrency 8", "concurrency 1" }), "categories in input order, not alphabetical");
        Assert.That(bars.SelectMany(b => b.Bars).Select(b => b.Value), Is.EquivalentTo(BarChart.Points.Select(p => p.Y)));
        Assert.That(bars.SelectMany(b => b.Bars).Select(b => b.Position), Is.Unique, "bars side by side, not stacked");
        Assert.That(bars.SelectMany(b => b.Bars).Select(b => b.ValueBase), Has.All.EqualTo(0), "linear y unless LogScaleY");
        Assert.That(plot.Axes.Title.Label.Text, Is.EqualTo("Proxy throughput by concurrency"));
        Assert.That(plot.Axes.Left.Label.Text, Is.EqualTo("Calls per second"));
    }

    [Test]
    public void ToPlot_LogScaleLine_DrawsOneLinePerSeries_OnDecades()
    {
        var plot = ChartRenderer.ToPlot(LineChart);

        var lines = plot.GetPlottables<Scatter>().ToList();
        Assert.That(lines.Select(l => l.LegendText), Is.EqualTo(new[] { "polling duplex", "SignalR long polling" }));
        var first = lines[0].Data.GetScatterPoints();
        Assert.That(first.Select(p => p.X), Is.EqualTo(new[] { 1.0, 10, 100 }));
        Assert.That(first.Select(p => p.Y), Is.EqualTo(new[] { Math.Log10(1.5), Math.Log10(2.75), Math.Log10(14) }).Within(1e-12), "log scale: decades are plotted evenly");
        Assert.That(plot.Axes.Left.TickGenerator, Is.InstanceOf<NumericAutomatic>().With.Property(nameof(NumericAutomatic.MinorTickGenerator)).InstanceOf<LogMinorTickGenerator>());
    }

    private static IEnumerable<TestCaseData> InvalidCharts()
    {
        yield return new TestCaseData(BarChart with { Name = " " }, "empty name").SetName("ToPlot_EmptyName_Throws");
        yield return new TestCaseData(BarChart with { Name = "../escape" }, "path characters").SetName("ToPlot_NameWithPathCharacters_Throws");
        yield return new TestCaseData(BarChart with { Points = [] }, "has no points").SetName("ToPlot_NoPoints_Throws");
        yield return new TestCaseData(BarChart with { Points = [new ChartPoint("s", "c", 0, double.NaN)] }, "not finite").SetName("ToPlot_NaNY_Throws");
        yield return new TestCaseData(BarChart with { Points = [new ChartPoint("s", "c", 0, double.PositiveInfinity)] }, "not finite").SetName("ToPlot_InfiniteY_Throws");
        yield return new TestCaseData(LineChart with { Points = [new ChartPoint("s", "", 1, 0)] }, "log-scale").SetName("ToPlot_ZeroYOnLogScale_Throws");
        yield return new TestCaseData(LineChart with { Points = [new ChartPoint("s", "", 1, -3)] }, "log-scale").SetName("ToPlot_NegativeYOnLogScale_Throws");
    }

    // The chart comes in as object because Chart is internal and a public test method cannot take it.
    [TestCaseSource(nameof(InvalidCharts))]
    public void ToPlot_InvalidChart_ThrowsNamingTheProblem(object invalidChart, string problem)
    {
        var chart = (Chart)invalidChart;

        var thrown = Assert.Throws<ArgumentException>(() => ChartRenderer.ToPlot(chart));

        Assert.That(thrown!.Message, Does.Contain(problem));
        Assert.That(thrown.Message, Does.Contain(string.IsNullOrWhiteSpace(chart.Name) ? chart.Title : chart.Name));
    }

    [Test]
    public void RenderAsync_TwoChartsWithOneName_Throws()
    {
        var thrown = Assert.ThrowsAsync<ArgumentException>(() => ChartRenderer.RenderAsync([BarChart, LineChart with { Name = BarChart.Name }], _outputDirectory, CancellationToken.None));

        Assert.That(thrown!.Message, Does.Contain("Two charts are named 'proxies-throughput'"));
    }

    [Test]
    public async Task RenderAsync_BarAndLineCharts_WritesPngAndSvgWithTitleAndSeries()
    {
        var report = Path.Combine(_outputDirectory, "report");

        var result = await ChartRenderer.RenderAsync([BarChart, LineChart], report, CancellationToken.None);

        Assert.That(result.Problem, Is.Null);
        Assert.That(result.Written, Is.EqualTo(new[] { Path.Combine(report, "proxies-throughput.png"), Path.Combine(report, "poll-latency.png") }));
        foreach (var (chart, pngFile) in new[] { BarChart, LineChart }.Zip(result.Written))
        {
            var png = await File.ReadAllBytesAsync(pngFile);
            Assert.That(png.AsSpan(0, 8).ToArray(), Is.EqualTo(new byte[] { 0x89, (byte)'P', (byte)'N', (byte)'G', 0x0D, 0x0A, 0x1A, 0x0A }), pngFile);
            Assert.That(png, Has.Length.GreaterThan(10_000), "a drawn chart, not an empty canvas");
            var svg = await File.ReadAllTextAsync(Path.ChangeExtension(pngFile, ".svg"));
            Assert.That(svg, Does.Contain("<svg"), pngFile);
            Assert.That(svg, Does.Contain(chart.Title), pngFile);
            Assert.That(svg, Does.Contain(chart.Points[0].Series), pngFile);
        }
    }
}
