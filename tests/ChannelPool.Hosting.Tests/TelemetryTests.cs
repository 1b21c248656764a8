using System.Diagnostics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using OpenTelemetry;
using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;

namespace ChannelPool.Hosting.Tests;

/// <summary>The pool's metrics and spans, collected through the OpenTelemetry SDK by AddChannelPoolInstrumentation.</summary>
public class TelemetryTests
{
    [Test]
    public async Task Metrics_ReachOpenTelemetry_WithTheirNamesUnitsAndPoolTag_FollowingPoolActivity()
    {
        var exported = new List<MetricSnapshot>();
        using var meters = Sdk.CreateMeterProviderBuilder()
            .AddChannelPoolInstrumentation()
            .AddInMemoryExporter(exported)
            .Build();
        await using var host = TestHost.Create(services => services.AddChannelPool("otel-orders", _ => new FakeChannelFactory())
            .Configure(o => o.PoolSize = 3)
            .ConfigureStartup(o => o.WaitForReadyChannels = 3));
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("otel-orders");
        await Eventually.That(() => pool.GetSnapshot() is { Idle: 3, Opening: 0 }, "the pool is warm");

        var held = await pool.AcquireAsync();
        await using (var broken = await pool.AcquireAsync())
        {
            broken.MarkBroken();
        }

        meters.ForceFlush();
        held.Dispose();

        var ours = Points(exported).Where(p => Equals(p.Tags.GetValueOrDefault(ChannelPoolTelemetry.PoolNameTag), "otel-orders")).ToList();
        Assert.That(ours, Is.Not.Empty);
        Assert.That(
            ours.Select(p => p.Instrument).Distinct(),
            Is.SupersetOf(new[]
            {
                "channelpool.channel.count", "channelpool.channel.max", "channelpool.channel.idle.max", "channelpool.channel.idle.min",
                "channelpool.channel.pending_requests", "channelpool.channel.create_time", "channelpool.channel.wait_time",
                "channelpool.channel.use_time", "channelpool.channel.evictions",
            }));

        var used = ours.Single(p => p.Instrument == "channelpool.channel.count" && Equals(p.Tags[ChannelPoolTelemetry.StateTag], "used"));
        Assert.That(used.Value, Is.EqualTo(1), "one channel is held at the flush");
        Assert.That(used.Unit, Is.EqualTo("{channel}"));
        var created = ours.Single(p => p.Instrument == "channelpool.channel.create_time");
        Assert.That(created.Unit, Is.EqualTo("s"));
        Assert.That(created.Type, Is.EqualTo(MetricType.Histogram));
        Assert.That(created.Value, Is.GreaterThanOrEqualTo(3), "one histogram entry per channel opened");
        var evicted = ours.Single(p => p.Instrument == "channelpool.channel.evictions");
        Assert.That(evicted.Tags[ChannelPoolTelemetry.EvictionReasonTag], Is.EqualTo("broken"));
        Assert.That(evicted.Value, Is.EqualTo(1));
        Assert.That(ours.Single(p => p.Instrument == "channelpool.channel.max").Value, Is.EqualTo(126));
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task TheControlsInstruments_ReachOpenTelemetry_TaggedWithThePool()
    {
        var exported = new List<MetricSnapshot>();
        using var meters = Sdk.CreateMeterProviderBuilder()
            .AddChannelPoolInstrumentation()
            .AddInMemoryExporter(exported)
            .Build();
        var time = new FakeTimeProvider();
        await using var host = TestHost.Create(
            services => services.AddChannelPool("otel-controls", _ => new FakeChannelFactory())
                .Configure(o =>
                {
                    o.PoolSize = 2;
                    o.LeakDetectionThreshold = TimeSpan.FromSeconds(10);
                })
                .ConfigureStartup(o => o.WaitForReadyChannels = 2),
            timeProvider: time);
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("otel-controls");

        var leaked = await pool.AcquireAsync();
        time.Advance(TimeSpan.FromSeconds(15));
        var cleared = pool.ClearAsync();
        pool.Pause();
        meters.ForceFlush();

        var ours = Points(exported).Where(p => Equals(p.Tags.GetValueOrDefault(ChannelPoolTelemetry.PoolNameTag), "otel-controls")).ToList();
        var leaks = ours.Single(p => p.Instrument == "channelpool.channel.leaks");
        Assert.That((leaks.Value, leaks.Unit), Is.EqualTo((1d, "{lease}")));
        var clears = ours.Single(p => p.Instrument == "channelpool.pool.clears");
        Assert.That((clears.Value, clears.Tags[ChannelPoolTelemetry.ClearReasonTag]), Is.EqualTo((1d, (object?)"requested")));
        Assert.That(ours.Single(p => p.Instrument == "channelpool.pool.paused").Value, Is.EqualTo(1), "1 while paused");
        Assert.That(
            ours.Where(p => p.Instrument == "channelpool.channel.evictions").Select(p => p.Tags[ChannelPoolTelemetry.EvictionReasonTag]),
            Does.Contain("cleared"));
        leaked.Dispose();
        await cleared.Within();
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task EachOpen_ReachesOpenTelemetry_AsASpanTaggedWithThePool()
    {
        var exported = new List<Activity>();
        using var traces = Sdk.CreateTracerProviderBuilder()
            .AddChannelPoolInstrumentation()
            .AddInMemoryExporter(exported)
            .Build();
        await using var host = TestHost.Create(services => services.AddChannelPool("otel-traced", _ => new FakeChannelFactory())
            .Configure(o => o.PoolSize = 3)
            .ConfigureStartup(o => o.WaitForReadyChannels = 3));

        await host.Host.StartAsync().Within();
        // The exporter adds to a plain List<T> as each span ends; only its Count is safe to poll meanwhile. The pool
        // opens exactly three channels, so once three spans are in, nothing adds to the list any more.
        await Eventually.That(() => exported.Count >= 3, "three open spans were exported");

        Assert.That(exported.Count(IsOurs), Is.EqualTo(3));
        Assert.That(exported.Where(IsOurs), Has.All.Matches<Activity>(s =>
            s.DisplayName == ChannelPoolTelemetry.OpenActivityName && s.Kind == ActivityKind.Client && s.Status != ActivityStatusCode.Error));
        await host.Host.StopAsync().Within();
    }

    /// <summary>Flattens exported snapshots into one row per point: name, unit, type, tags and the value asserted on.</summary>
    private static List<(string Instrument, string Unit, MetricType Type, Dictionary<string, object?> Tags, double Value)> Points(List<MetricSnapshot> exported) =>
    [
        .. exported.SelectMany(metric => metric.MetricPoints.Select(point =>
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
            return (metric.Name, metric.Unit, metric.MetricType, tags, value);
        })),
    ];

    private static bool IsOurs(Activity span) => Equals(span.GetTagItem(ChannelPoolTelemetry.PoolNameTag), "otel-traced");
}
