using System.Globalization;
using System.Text;
using Spectre.Console;

namespace ChannelPool.Perf.Reporting;

/// <summary>
/// A table of figures, already formatted, and the one place that writes tables: to the console, and as markdown into
/// the run's report and what <c>--publish</c> writes.
/// </summary>
internal sealed record ReportTable(string Title, IReadOnlyList<string> Columns, IReadOnlyList<IReadOnlyList<string>> Rows)
{
    public Table ToConsole()
    {
        var table = new Table().Title(Markup.Escape(Title)).Border(TableBorder.Rounded);
        foreach (var column in Columns)
        {
            table.AddColumn(Markup.Escape(column));
        }

        foreach (var row in Rows)
        {
            table.AddRow([.. row.Select(Markup.Escape)]);
        }

        return table;
    }

    /// <param name="heading">The markdown heading the title goes under: <c>###</c> in a section, <c>##</c> for the report's targets.</param>
    public void WriteMarkdown(StringBuilder md, string heading = "###")
    {
        md.AppendLine(CultureInfo.InvariantCulture, $"{heading} {Title}").AppendLine();
        md.AppendLine("| " + string.Join(" | ", Columns.Select(Escape)) + " |");
        md.AppendLine("|" + string.Concat(Columns.Select(_ => "---|")));
        foreach (var row in Rows)
        {
            md.AppendLine("| " + string.Join(" | ", row.Select(Escape)) + " |");
        }

        md.AppendLine();
    }

    private static string Escape(string text) => text.Replace("|", "\\|", StringComparison.Ordinal);
}

/// <summary>One of the issue's targets, checked against what this run measured.</summary>
/// <param name="Target">The goal, for example <c>pooled reuse ≥ 0.95× singleton at concurrency 8</c>.</param>
/// <param name="Measured">What was measured, for example <c>0.97×</c>.</param>
/// <param name="Met">Whether the goal was met; null when this run could not tell (for example a peer was missing).</param>
/// <param name="Shortfall">When missed: by how much, in words.</param>
internal sealed record TargetCheck(string Target, string Measured, bool? Met, string? Shortfall = null)
{
    public string Verdict => Met switch
    {
        true => "met",
        false => "missed",
        null => "not measured",
    };

    /// <summary>Gets the targets as the report's table: the verdict with the shortfall after it.</summary>
    public static ReportTable Table(IEnumerable<TargetCheck> targets) => new(
        "Targets",
        ["Target", "Measured", "Verdict"],
        [.. targets.Select(t => (IReadOnlyList<string>)[t.Target, t.Measured, t.Met == true || t.Shortfall is null ? t.Verdict : $"{t.Verdict}: {t.Shortfall}"])]);
}
