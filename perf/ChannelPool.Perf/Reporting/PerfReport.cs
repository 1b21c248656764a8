using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace ChannelPool.Perf.Reporting;

/// <summary>One scenario's part of the report.</summary>
internal sealed class ReportSection(string id, string title, string description)
{
    public string Id { get; } = id;

    public string Title { get; } = title;

    public string Description { get; } = description;

    public List<ReportTable> Tables { get; } = [];

    public List<TargetCheck> Targets { get; } = [];

    public List<string> Notes { get; } = [];

    /// <summary>Gets or sets the scenario's typed results, written to results.json as they are.</summary>
    public object? Results { get; set; }
}

/// <summary>Where and how a run happened, at the top of the report.</summary>
/// <param name="Servers">Where the servers ran, for example <c>embedded on loopback, child process</c>.</param>
internal sealed record RunInfo(
    DateTimeOffset Started, string CommandLine, string Machine, int ProcessorCount, string Runtime, string Os, string Servers, IReadOnlyDictionary<string, string> Settings)
{
    public static RunInfo Capture(string commandLine, string servers, IReadOnlyDictionary<string, string> settings) => new(
        DateTimeOffset.Now,
        commandLine,
        Environment.MachineName,
        Environment.ProcessorCount,
        RuntimeInformation.FrameworkDescription,
        RuntimeInformation.OSDescription,
        servers,
        settings);
}

/// <summary>
/// The perf console's report: sections added as scenarios finish, written as markdown and JSON into a run's
/// own folder, and, when published, as one current report per scenario, replaced in place.
/// </summary>
internal sealed class PerfReport(RunInfo info)
{
    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web)
    {
        WriteIndented = true,
        NumberHandling = JsonNumberHandling.AllowNamedFloatingPointLiterals,
        Converters = { new JsonStringEnumConverter() },
    };

    public RunInfo Info { get; } = info;

    public List<ReportSection> Sections { get; } = [];

    public static string NewDirectory(string root) =>
        Path.Combine(root, DateTimeOffset.Now.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));

    /// <summary>Writes <c>report.md</c> and <c>results.json</c> into <paramref name="directory"/>.</summary>
    public async Task WriteAsync(string directory, CancellationToken cancellationToken)
    {
        Directory.CreateDirectory(directory);
        await File.WriteAllTextAsync(Path.Combine(directory, "report.md"), ToMarkdown(Sections), cancellationToken);
        await using var json = File.Create(Path.Combine(directory, "results.json"));
        await JsonSerializer.SerializeAsync(
            json,
            new
            {
                Info,
                Sections = Sections.Select(s => new { s.Id, s.Title, s.Targets, s.Notes, s.Results, s.Tables }),
            },
            Json,
            cancellationToken);
    }

    /// <summary>
    /// Writes each section as the current report of its scenario: <c>&lt;root&gt;/&lt;section id&gt;/report.md</c> with the
    /// after removing the report (and any charts an older console drew) that were there. Git keeps the ones before.
    /// </summary>
    /// <param name="root">The folder that holds one folder per scenario (the repository's <c>docs/perf</c>).</param>
    /// <returns>The folders written, one per section.</returns>
    public async Task<IReadOnlyList<string>> PublishAsync(string root, CancellationToken cancellationToken)
    {
        var folders = new List<string>();
        foreach (var section in Sections)
        {
            var folder = Path.Combine(root, section.Id);
            Directory.CreateDirectory(folder);
            foreach (var stale in Directory.EnumerateFiles(folder).Where(f => Path.GetExtension(f) is ".md" or ".png" or ".svg" or ".json"))
            {
                File.Delete(stale);
            }

            await File.WriteAllTextAsync(Path.Combine(folder, "report.md"), ToMarkdown([section]), cancellationToken);

            folders.Add(folder);
        }

        return folders;
    }

    /// <summary>The report of <paramref name="sections"/> as markdown: the run, the targets those sections checked, then each section.</summary>
    /// <param name="sections">The sections to write: all of them, or one scenario's when published.</param>
    public string ToMarkdown(IReadOnlyList<ReportSection> sections)
    {
        var md = new StringBuilder();
        md.AppendLine("# ChannelPool perf report").AppendLine();
        md.AppendLine(CultureInfo.InvariantCulture, $"- Run: {Info.Started:yyyy-MM-dd HH:mm:ss zzz}");
        md.AppendLine(CultureInfo.InvariantCulture, $"- Command: `{Info.CommandLine}`");
        md.AppendLine(CultureInfo.InvariantCulture, $"- Machine: {Info.ProcessorCount} logical cores, {Info.Os}, {Info.Runtime}");
        md.AppendLine(CultureInfo.InvariantCulture, $"- Servers: {Info.Servers}");
        foreach (var (name, value) in Info.Settings)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"- {name}: {value}");
        }

        md.AppendLine();
        var targets = sections.SelectMany(s => s.Targets).ToList();
        if (targets.Count > 0)
        {
            TargetCheck.Table(targets).WriteMarkdown(md, "##");
        }

        foreach (var section in sections)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"## {section.Title}").AppendLine();
            md.AppendLine(section.Description).AppendLine();
            foreach (var table in section.Tables)
            {
                table.WriteMarkdown(md);
            }

            foreach (var note in section.Notes)
            {
                md.AppendLine("- " + note);
            }

            if (section.Notes.Count > 0)
            {
                md.AppendLine();
            }
        }

        return md.ToString();
    }
}
