using System.Collections.Concurrent;
using System.Diagnostics;
using OpenTelemetry;
using OpenTelemetry.Metrics;

namespace ChannelPool.Hosting.Tests;

/// <summary>One exported metric point, copied out of the SDK's reused objects at export time.</summary>
internal sealed record ExportedPoint(string Instrument, string Unit, MetricType Type, IReadOnlyDictionary<string, object?> Tags, double Value);

/// <summary>
/// Keeps exported metric points in memory. Stands in for OpenTelemetry.Exporter.InMemory, which the package source
/// lacks; the SDK reuses metric objects between exports, so each point is copied when exported.
/// </summary>
internal sealed class InMemoryMetricExporter : BaseExporter<Metric>
{
    private readonly ConcurrentQueue<ExportedPoint> _points = new();

    public IReadOnlyList<ExportedPoint> Points => [.. _points];

    public override ExportResult Export(in Batch<Metric> batch)
    {
        foreach (var metric in batch)
        {
            foreach (ref readonly var point in metric.GetMetricPoints())
            {
                var tags = new Dictionary<string, object?>();
                foreach (var tag in point.Tags)
                {
                    tags[tag.Key] = tag.Value;
                }

                var value = metric.MetricType switch
                {
                    MetricType.LongSum or MetricType.LongSumNonMonotonic => point.GetSumLong(),
                    MetricType.DoubleSum or MetricType.DoubleSumNonMonotonic => point.GetSumDouble(),
                    MetricType.LongGauge => point.GetGaugeLastValueLong(),
                    MetricType.DoubleGauge => point.GetGaugeLastValueDouble(),
                    MetricType.Histogram => point.GetHistogramCount(),
                    _ => double.NaN,
                };
                _points.Enqueue(new ExportedPoint(metric.Name, metric.Unit, metric.MetricType, tags, value));
            }
        }

        return ExportResult.Success;
    }
}

/// <summary>Keeps exported spans in memory.</summary>
internal sealed class InMemorySpanExporter : BaseExporter<Activity>
{
    private readonly ConcurrentQueue<Activity> _spans = new();

    public IReadOnlyList<Activity> Spans => [.. _spans];

    public override ExportResult Export(in Batch<Activity> batch)
    {
        foreach (var span in batch)
        {
            _spans.Enqueue(span);
        }

        return ExportResult.Success;
    }
}
