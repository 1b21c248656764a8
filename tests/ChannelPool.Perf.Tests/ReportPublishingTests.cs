using ChannelPool.Perf.Cli;
using ChannelPool.Perf.Reporting;

namespace ChannelPool.Perf.Tests;

/// <summary>--publish: one current report per scenario, replaced in place, as the repository keeps them in docs/perf.</summary>
public class ReportPublishingTests
{
    private string _run = null!;
    private string _docs = null!;

    [SetUp]
    public void CreateFolders()
    {
        _run = Directory.CreateTempSubdirectory("channelpool-perf-run-").FullName;
        _docs = Directory.CreateTempSubdirectory("channelpool-perf-docs-").FullName;
    }

    [TearDown]
    public void RemoveFolders()
    {
        Directory.Delete(_run, recursive: true);
        Directory.Delete(_docs, recursive: true);
    }

    [Test]
    public async Task Publish_WritesEachScenarioIntoItsOwnFolder_WithOnlyItsTargetsAndCharts()
    {
        var report = Report(Section("proxies", "Proxies", "throughput"), Section("poll-modes", "Poll modes", "poll-modes-throughput"));
        var rendered = DrawnCharts("throughput", "poll-modes-throughput");

        var folders = await report.PublishAsync(_docs, rendered, CancellationToken.None);

        Assert.That(folders.Select(Path.GetFileName), Is.EqualTo(new[] { "proxies", "poll-modes" }));
        var proxies = await File.ReadAllTextAsync(Path.Combine(_docs, "proxies", "report.md"));
        Assert.That(proxies, Does.Contain("- Command: `ChannelPool.Perf`").And.Contain("## Proxies").And.Contain("| Proxies target | 1.00× | met |"));
        Assert.That(proxies, Does.Not.Contain("Poll modes"), "each scenario's report holds its own section and targets only");
        Assert.That(proxies, Does.Contain("![Proxies chart](throughput.png)"));
        Assert.That(Directory.GetFiles(Path.Combine(_docs, "proxies")).Select(Path.GetFileName), Is.EquivalentTo(new[] { "report.md", "throughput.png" }));
        Assert.That(Directory.GetFiles(Path.Combine(_docs, "poll-modes")).Select(Path.GetFileName), Is.EquivalentTo(new[] { "report.md", "poll-modes-throughput.png" }));
    }

    [Test]
    public async Task Publish_ReplacesTheScenariosLastReport_AndLeavesOtherScenariosAlone()
    {
        Directory.CreateDirectory(Path.Combine(_docs, "proxies"));
        await File.WriteAllTextAsync(Path.Combine(_docs, "proxies", "report.md"), "yesterday's proxies");
        await File.WriteAllTextAsync(Path.Combine(_docs, "proxies", "proxies-binding-gone-throughput.png"), "a chart this run no longer draws");
        Directory.CreateDirectory(Path.Combine(_docs, "broadcast"));
        await File.WriteAllTextAsync(Path.Combine(_docs, "broadcast", "report.md"), "yesterday's broadcast");

        await Report(Section("proxies", "Proxies", "throughput")).PublishAsync(_docs, DrawnCharts("throughput"), CancellationToken.None);

        Assert.That(await File.ReadAllTextAsync(Path.Combine(_docs, "proxies", "report.md")), Does.Contain("## Proxies").And.Not.Contain("yesterday"));
        Assert.That(File.Exists(Path.Combine(_docs, "proxies", "proxies-binding-gone-throughput.png")), Is.False, "a stale chart would read as today's");
        Assert.That(await File.ReadAllTextAsync(Path.Combine(_docs, "broadcast", "report.md")), Is.EqualTo("yesterday's broadcast"), "a scenario this run did not measure keeps its report");
    }

    [Test]
    public async Task Publish_SaysWhichChartWasNotDrawn_AndCopiesNone()
    {
        var report = Report(Section("proxies", "Proxies", "throughput"));

        await report.PublishAsync(_docs, new ChartRenderResult([], "no fonts"), CancellationToken.None);

        Assert.That(await File.ReadAllTextAsync(Path.Combine(_docs, "proxies", "report.md")), Does.Contain("Chart *Proxies chart*: not drawn (no fonts)."));
        Assert.That(Directory.GetFiles(Path.Combine(_docs, "proxies")).Select(Path.GetFileName), Is.EqualTo(new[] { "report.md" }));
    }

    [TestCase("proxies --kind singleton \"pooled reuse\" --output {0} --calls 100", "ChannelPool.Perf proxies --kind singleton \"pooled reuse\" --calls 100")]
    [TestCase("--publish {0} --output {0}", "ChannelPool.Perf")]
    [TestCase("collaboration --row 100,5,1 --publish={0}", "ChannelPool.Perf collaboration --row 100,5,1")]
    public void TheReportsCommandLine_QuotesWhatHasSpaces_AndLeavesOutWhereTheReportsWent(string arguments, string recorded)
    {
        var common = new CommonOptions();
        var root = PerfCli.Build();
        var parse = root.Parse(Split(string.Format(System.Globalization.CultureInfo.InvariantCulture, arguments, _run)));

        Assert.That(parse.Errors, Is.Empty);
        Assert.That(PerfCli.CommandLine(parse, common.NotRecorded), Is.EqualTo(recorded));
    }

    private static string[] Split(string arguments) =>
        [.. arguments.Split('"').SelectMany((part, i) => i % 2 == 1 ? [part] : part.Split(' ', StringSplitOptions.RemoveEmptyEntries))];

    private static PerfReport Report(params ReportSection[] sections)
    {
        var report = new PerfReport(RunInfo.Capture("ChannelPool.Perf", "embedded on loopback, child process", new Dictionary<string, string>()));
        report.Sections.AddRange(sections);
        return report;
    }

    private static ReportSection Section(string id, string title, string chart)
    {
        var section = new ReportSection(id, title, $"What {title} measured.");
        section.Tables.Add(new ReportTable($"{title} figures", ["Kind", "Calls/s"], [["pooled reuse", "1,000"]]));
        section.Targets.Add(new TargetCheck($"{title} target", "1.00×", true));
        section.Charts.Add(new Chart(chart, $"{title} chart", ChartKind.GroupedBar, "x", "y", [new ChartPoint("s", "c", 0, 1)]));
        return section;
    }

    private ChartRenderResult DrawnCharts(params string[] names)
    {
        foreach (var name in names)
        {
            File.WriteAllBytes(Path.Combine(_run, name + ".png"), [0x89, 0x50, 0x4E, 0x47]);
        }

        return new ChartRenderResult([.. names.Select(n => Path.Combine(_run, n + ".png"))], null);
    }
}
