using System.Text.Json.Nodes;
using ChannelPool.Perf.Reporting;

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

    private string outputDirectory = null!;

    [SetUp]
    public void CreateOutputDirectory() =>
        outputDirectory = Directory.CreateTempSubdirectory("channelpool-charts-").FullName;

    [TearDown]
    public void DeleteOutputDirectory() => Directory.Delete(outputDirectory, recursive: true);

    [Test]
    public void ToVegaLite_SameChart_GivesByteIdenticalSpec()
    {
        var copy = BarChart with { Points = [.. BarChart.Points] };

        Assert.That(ChartRenderer.ToVegaLite(copy), Is.EqualTo(ChartRenderer.ToVegaLite(BarChart)));
    }

    [Test]
    public void ToVegaLite_GroupedBar_HoldsSeriesCategoriesAndValuesInInputOrder()
    {
        var spec = JsonNode.Parse(ChartRenderer.ToVegaLite(BarChart))!;

        var values = spec["data"]!["values"]!.AsArray();
        Assert.That(values.Select(v => (string?)v!["series"]), Is.EqualTo(BarChart.Points.Select(p => p.Series)));
        Assert.That(values.Select(v => (string?)v!["category"]), Is.EqualTo(BarChart.Points.Select(p => p.Category)));
        Assert.That(values.Select(v => (double)v!["y"]!), Is.EqualTo(BarChart.Points.Select(p => p.Y)));
        Assert.That((string?)spec["title"]!["text"], Is.EqualTo("Proxy throughput by concurrency"));
        Assert.That((string?)spec["mark"]!["type"], Is.EqualTo("bar"));
        var encoding = spec["encoding"]!;
        Assert.That((string?)encoding["x"]!["field"], Is.EqualTo("category"));
        Assert.That(IsSetToNull(encoding["x"]!, "sort"), Is.True, "categories keep input order with sort: null");
        Assert.That((string?)encoding["xOffset"]!["field"], Is.EqualTo("series"));
        Assert.That((string?)encoding["color"]!["field"], Is.EqualTo("series"));
        Assert.That((string?)encoding["y"]!["title"], Is.EqualTo("Calls per second"));
        Assert.That(encoding["y"]!["scale"], Is.Null, "linear y unless LogScaleY");
        Assert.That(IsSetToNull(encoding["y"]!, "stack"), Is.True, "bars side by side, not stacked from zero (which empties a log scale)");
        Assert.That(encoding["tooltip"]!.AsArray(), Has.Count.EqualTo(3));
    }

    [Test]
    public void ToVegaLite_LogScaleLine_HasNumericXPointsAndLogY()
    {
        var spec = JsonNode.Parse(ChartRenderer.ToVegaLite(LineChart))!;

        Assert.That((string?)spec["mark"]!["type"], Is.EqualTo("line"));
        Assert.That((bool?)spec["mark"]!["point"], Is.True);
        Assert.That((string?)spec["encoding"]!["x"]!["type"], Is.EqualTo("quantitative"));
        Assert.That((string?)spec["encoding"]!["y"]!["scale"]!["type"], Is.EqualTo("log"));
        var values = spec["data"]!["values"]!.AsArray();
        Assert.That(values.Select(v => (double)v!["x"]!), Is.EqualTo(LineChart.Points.Select(p => p.X)));
        Assert.That(values.Select(v => (string?)v!["series"]).Distinct(), Is.EqualTo(new[] { "polling duplex", "SignalR long polling" }));
    }

    private static IEnumerable<TestCaseData> InvalidCharts()
    {
        yield return new TestCaseData(BarChart with { Name = " " }, "empty name").SetName("ToVegaLite_EmptyName_Throws");
        yield return new TestCaseData(BarChart with { Name = "../escape" }, "path characters").SetName("ToVegaLite_NameWithPathCharacters_Throws");
        yield return new TestCaseData(BarChart with { Points = [] }, "has no points").SetName("ToVegaLite_NoPoints_Throws");
        yield return new TestCaseData(BarChart with { Points = [new ChartPoint("s", "c", 0, double.NaN)] }, "not finite").SetName("ToVegaLite_NaNY_Throws");
        yield return new TestCaseData(BarChart with { Points = [new ChartPoint("s", "c", 0, double.PositiveInfinity)] }, "not finite").SetName("ToVegaLite_InfiniteY_Throws");
        yield return new TestCaseData(LineChart with { Points = [new ChartPoint("s", "", 1, 0)] }, "log-scale").SetName("ToVegaLite_ZeroYOnLogScale_Throws");
        yield return new TestCaseData(LineChart with { Points = [new ChartPoint("s", "", 1, -3)] }, "log-scale").SetName("ToVegaLite_NegativeYOnLogScale_Throws");
    }

    // The chart comes in as object because Chart is internal and a public test method cannot take it.
    [TestCaseSource(nameof(InvalidCharts))]
    public void ToVegaLite_InvalidChart_ThrowsNamingTheProblem(object invalidChart, string problem)
    {
        var chart = (Chart)invalidChart;

        var thrown = Assert.Throws<ArgumentException>(() => ChartRenderer.ToVegaLite(chart));

        Assert.That(thrown!.Message, Does.Contain(problem));
        Assert.That(thrown.Message, Does.Contain(string.IsNullOrWhiteSpace(chart.Name) ? chart.Title : chart.Name));
    }

    [Test]
    public void RenderAsync_TwoChartsWithOneName_Throws()
    {
        var renderer = new ChartRenderer();

        var thrown = Assert.ThrowsAsync<ArgumentException>(() => renderer.RenderAsync([BarChart, LineChart with { Name = BarChart.Name }], outputDirectory, CancellationToken.None));

        Assert.That(thrown!.Message, Does.Contain("Two charts are named 'proxies-throughput'"));
    }

    [Test]
    public async Task RenderAsync_RendererFilesMissing_KeepsSpecsAndSaysWhy()
    {
        Assume.That(ChartRenderer.FindOnPath("node"), Is.Not.Null, "node is not installed on this machine.");
        var renderer = new ChartRenderer(Path.Combine(outputDirectory, "no-renderer-here"));

        var result = await renderer.RenderAsync([BarChart], Path.Combine(outputDirectory, "report"), CancellationToken.None);

        Assert.That(result.AllDrawn, Is.False);
        Assert.That(result.Written, Is.Empty);
        Assert.That(result.Problem, Does.Contain("render.mjs").And.Contain("is missing"));
        Assert.That(File.ReadAllText(result.SpecFiles.Single()), Is.EqualTo(ChartRenderer.ToVegaLite(BarChart)));
    }

    [Test]
    [CancelAfter(8 * 60 * 1000)]
    public async Task RenderAsync_BarAndLineCharts_WritesSvgWithTitleAndSeries(CancellationToken cancellationToken)
    {
        Assume.That(ChartRenderer.FindOnPath("node"), Is.Not.Null, "node is not installed on this machine.");
        var report = Path.Combine(outputDirectory, "report");

        var result = await new ChartRenderer().RenderAsync([BarChart, LineChart], report, cancellationToken);

        Assert.That(result.Problem, Is.Null);
        Assert.That(result.SpecFiles, Is.EqualTo(new[] { Path.Combine(report, "proxies-throughput.vl.json"), Path.Combine(report, "poll-latency.vl.json") }));
        Assert.That(result.Written, Is.EqualTo(new[] { Path.Combine(report, "proxies-throughput.svg"), Path.Combine(report, "poll-latency.svg") }));
        foreach (var (chart, svgFile) in new[] { BarChart, LineChart }.Zip(result.Written))
        {
            var svg = await File.ReadAllTextAsync(svgFile, cancellationToken);
            Assert.That(svg, Does.StartWith("<svg"), svgFile);
            Assert.That(svg, Does.Contain(chart.Title), svgFile);
            Assert.That(svg, Does.Contain(chart.Points[0].Series), svgFile);
        }
    }

    private static bool IsSetToNull(JsonNode channel, string property) =>
        channel.AsObject().TryGetPropertyValue(property, out var value) && value is null;
}
