using System.Diagnostics;
using System.Globalization;
using System.Text;
using OpenTelemetry;
using OpenTelemetry.Metrics;

namespace ChannelPool.WorkerSample;

/// <summary>
/// Prints each metrics export as a compact block per pool. The package source has no OpenTelemetry.Exporter.Console,
/// so the sample carries this small one.
/// </summary>
internal sealed class ConsoleMetricExporter : BaseExporter<Metric>
{
    // The short names alone mislead: idle above idle.max looks like a bug until one reads what idle.max means.
    private bool _descriptionsPrinted;

    public override ExportResult Export(in Batch<Metric> batch)
    {
        var lines = new SortedDictionary<string, List<string>>(StringComparer.Ordinal);
        var descriptions = new SortedDictionary<string, string>(StringComparer.Ordinal);
        foreach (var metric in batch)
        {
            descriptions[ShortName(metric)] = metric.Description;
            foreach (ref readonly var point in metric.GetMetricPoints())
            {
                string? pool = null;
                var labels = new List<string>();
                foreach (var tag in point.Tags)
                {
                    if (tag.Key == ChannelPoolTelemetry.PoolNameTag)
                    {
                        pool = tag.Value?.ToString();
                    }
                    else
                    {
                        labels.Add($"{tag.Key.Split('.')[^1]}={tag.Value}");
                    }
                }

                var value = metric.MetricType switch
                {
                    MetricType.Histogram => FormatHistogram(point.GetHistogramCount(), point.GetHistogramSum(), metric.Unit),
                    MetricType.LongSum or MetricType.LongSumNonMonotonic => point.GetSumLong().ToString(CultureInfo.InvariantCulture),
                    MetricType.DoubleSum or MetricType.DoubleSumNonMonotonic => point.GetSumDouble().ToString("0.###", CultureInfo.InvariantCulture),
                    MetricType.LongGauge => point.GetGaugeLastValueLong().ToString(CultureInfo.InvariantCulture),
                    _ => point.GetGaugeLastValueDouble().ToString("0.###", CultureInfo.InvariantCulture),
                };
                var name = ShortName(metric);
                var label = labels.Count == 0 ? string.Empty : $" [{string.Join(", ", labels)}]";
                (lines.TryGetValue(pool ?? "?", out var list) ? list : lines[pool ?? "?"] = []).Add($"  {name,-18}{label,-24} {value}");
            }
        }

        var output = new StringBuilder();
        if (!_descriptionsPrinted && descriptions.Count > 0)
        {
            _descriptionsPrinted = true;
            output.AppendLine("--- what the metrics below mean ---");
            foreach (var (name, description) in descriptions)
            {
                output.AppendLine(CultureInfo.InvariantCulture, $"  {name,-18}{description}");
            }
        }

        foreach (var (pool, list) in lines)
        {
            output.AppendLine(CultureInfo.InvariantCulture, $"--- metrics for pool '{pool}' at {DateTime.Now:HH:mm:ss} ---");
            list.Sort(StringComparer.Ordinal);
            list.ForEach(line => output.AppendLine(line));
        }

        Console.Write(output.ToString());
        return ExportResult.Success;
    }

    private static string ShortName(Metric metric) => metric.Name.Replace("channelpool.channel.", string.Empty, StringComparison.Ordinal);

    private static string FormatHistogram(long count, double sum, string? unit) =>
        count == 0
            ? "no samples"
            : string.Create(CultureInfo.InvariantCulture, $"n={count}, mean={sum / count * (unit == "s" ? 1000 : 1):0.###}{(unit == "s" ? " ms" : string.Empty)}");
}

/// <summary>Prints one line per finished span.</summary>
internal sealed class ConsoleSpanExporter : BaseExporter<Activity>
{
    public override ExportResult Export(in Batch<Activity> batch)
    {
        foreach (var span in batch)
        {
            Console.WriteLine(string.Create(
                CultureInfo.InvariantCulture,
                $"span {span.DisplayName} pool={span.GetTagItem(ChannelPoolTelemetry.PoolNameTag)} channel={span.GetTagItem(ChannelPoolTelemetry.ChannelIdTag)} {span.Duration.TotalMilliseconds:0.00} ms {span.Status}"));
        }

        return ExportResult.Success;
    }
}
