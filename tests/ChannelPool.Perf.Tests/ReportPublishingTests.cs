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
    public async Task Publish_WritesEachScenarioIntoItsOwnFolder_WithOnlyItsTargets()
    {
        var report = Report(Section("proxies", "Proxies"), Section("poll-modes", "Poll modes"));

        var folders = await report.PublishAsync(_docs, CancellationToken.None);

        Assert.That(folders.Select(Path.GetFileName), Is.EqualTo(new[] { "proxies", "poll-modes" }));
        var proxies = await File.ReadAllTextAsync(Path.Combine(_docs, "proxies", "report.md"));
        Assert.That(proxies, Does.Contain("- Command: `ChannelPool.Perf`").And.Contain("## Proxies").And.Contain("| Proxies target | 1.00× | met |"));
        Assert.That(proxies, Does.Not.Contain("Poll modes"), "each scenario's report holds its own section and targets only");
        Assert.That(Directory.GetFiles(Path.Combine(_docs, "proxies")).Select(Path.GetFileName), Is.EqualTo(new[] { "report.md" }));
        Assert.That(Directory.GetFiles(Path.Combine(_docs, "poll-modes")).Select(Path.GetFileName), Is.EqualTo(new[] { "report.md" }));
    }

    [Test]
    public async Task Publish_ReplacesTheScenariosLastReport_AndLeavesOtherScenariosAlone()
    {
        Directory.CreateDirectory(Path.Combine(_docs, "proxies"));
        await File.WriteAllTextAsync(Path.Combine(_docs, "proxies", "report.md"), "yesterday's proxies");
        await File.WriteAllTextAsync(Path.Combine(_docs, "proxies", "proxies-binding-gone-throughput.png"), "a chart an older console drew");
        Directory.CreateDirectory(Path.Combine(_docs, "broadcast"));
        await File.WriteAllTextAsync(Path.Combine(_docs, "broadcast", "report.md"), "yesterday's broadcast");

        await Report(Section("proxies", "Proxies")).PublishAsync(_docs, CancellationToken.None);

        Assert.That(await File.ReadAllTextAsync(Path.Combine(_docs, "proxies", "report.md")), Does.Contain("## Proxies").And.Not.Contain("yesterday"));
        Assert.That(File.Exists(Path.Combine(_docs, "proxies", "proxies-binding-gone-throughput.png")), Is.False, "a stale chart would read as today's");
        Assert.That(await File.ReadAllTextAsync(Path.Combine(_docs, "broadcast", "report.md")), Is.EqualTo("yesterday's broadcast"), "a scenario this run did not measure keeps its report");
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

    private static ReportSection Section(string id, string title)
    {
        var section = new ReportSection(id, title, $"What {title} measured.");
        section.Tables.Add(new ReportTable($"{title} figures", ["Kind", "Calls/s"], [["pooled reuse", "1,000"]]));
        section.Targets.Add(new TargetCheck($"{title} target", "1.00×", true));
        return section;
    }
}
