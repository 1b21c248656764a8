using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;

namespace ChannelPool.Tests.Telemetry;

public class MetricsTests : PoolTestBase
{
    private static readonly string[] Histograms =
        ["channelpool.channel.create_time", "channelpool.channel.wait_time", "channelpool.channel.use_time"];

    private static readonly string[] Counters =
        ["channelpool.channel.timeouts", "channelpool.channel.evictions", "channelpool.channel.open_failures", "channelpool.channel.leaks", "channelpool.pool.clears",
         "channelpool.channel.awaited_opens"];

    private static readonly string[] Gauges =
    [
        "channelpool.channel.count", "channelpool.channel.max", "channelpool.channel.idle.max", "channelpool.channel.idle.min",
        "channelpool.channel.idle.target", "channelpool.channel.pending_requests", "channelpool.pool.paused",
    ];

    private ServiceProvider _services = null!;
    private Dictionary<string, MetricCollector<double>> _histograms = null!;
    private Dictionary<string, MetricCollector<long>> _counters = null!;
    private Dictionary<string, MetricCollector<int>> _gauges = null!;

    [SetUp]
    public void Listen()
    {
        // The pool gets a meter factory of its own, as in a host, so the collectors see this test's pool and no other.
        _services = new ServiceCollection().AddMetrics().BuildServiceProvider();
        var meters = _services.GetRequiredService<IMeterFactory>();
        _histograms = Histograms.ToDictionary(name => name, name => new MetricCollector<double>(meters, ChannelPoolTelemetry.MeterName, name));
        _counters = Counters.ToDictionary(name => name, name => new MetricCollector<long>(meters, ChannelPoolTelemetry.MeterName, name));
        _gauges = Gauges.ToDictionary(name => name, name => new MetricCollector<int>(meters, ChannelPoolTelemetry.MeterName, name));
    }

    [TearDown]
    public void EveryMeasurement_CarriesThePoolName()
    {
        var untagged = _histograms.Values.SelectMany(Untagged)
            .Concat(_counters.Values.SelectMany(Untagged))
            .Concat(_gauges.Values.SelectMany(Untagged))
            .ToList();
        foreach (var collector in _histograms.Values.Cast<IDisposable>().Concat(_counters.Values).Concat(_gauges.Values))
        {
            collector.Dispose();
        }

        _services.Dispose();
        Assert.That(untagged, Is.Empty, "instruments whose measurements lack the pool name");
    }

    [Test]
    public async Task Histograms_RecordCreateWaitAndUseTime_InSeconds_TaggedWithThePoolName()
    {
        var pool = MeteredPool(o => o.PoolSize = 3);
        await pool.WarmUpAsync().Within();

        await using (await pool.AcquireAsync())
        {
            Time.Advance(TimeSpan.FromMilliseconds(250));
        }

        Assert.That(_histograms["channelpool.channel.create_time"].GetMeasurementSnapshot(), Has.Count.EqualTo(3));
        Assert.That(_histograms["channelpool.channel.wait_time"].GetMeasurementSnapshot(), Has.Count.EqualTo(1));
        var use = _histograms["channelpool.channel.use_time"].GetMeasurementSnapshot();
        Assert.That(use, Has.Count.EqualTo(1));
        Assert.That(use[0].Value, Is.EqualTo(0.25).Within(1e-9), "use time follows the (fake) clock");
        Assert.That(_histograms.Values.Select(c => c.Instrument?.Unit), Has.All.EqualTo("s"));
        Assert.That(
            _histograms.Values.SelectMany(c => c.GetMeasurementSnapshot()),
            Has.All.Matches<CollectedMeasurement<double>>(m => Equals(m.Tags[ChannelPoolTelemetry.PoolNameTag], pool.Name)));
    }

    [Test]
    public async Task ChannelCount_ReportsIdleUsedAndOpening_AndTheLimits()
    {
        var pool = MeteredPool(o =>
        {
            o.PoolSize = 4;
            o.MaxChannels = 8;
        });
        await pool.WarmUpAsync().Within();
        await using var lease = await pool.AcquireAsync();

        foreach (var gauge in _gauges.Values)
        {
            gauge.RecordObservableInstruments();
        }

        var counts = _gauges["channelpool.channel.count"].GetMeasurementSnapshot()
            .ToDictionary(m => (string)m.Tags[ChannelPoolTelemetry.StateTag]!, m => m.Value);
        Assert.That(counts, Is.EquivalentTo(new Dictionary<string, int> { ["idle"] = 3, ["used"] = 1, ["opening"] = 0 }));
        Assert.That(_gauges["channelpool.channel.max"].GetMeasurementSnapshot().Single().Value, Is.EqualTo(8));
        Assert.That(_gauges["channelpool.channel.idle.max"].GetMeasurementSnapshot().Single().Value, Is.EqualTo(4));
        Assert.That(_gauges["channelpool.channel.idle.min"].GetMeasurementSnapshot().Single().Value, Is.EqualTo(2));
        Assert.That(_gauges["channelpool.channel.pending_requests"].GetMeasurementSnapshot().Single().Value, Is.EqualTo(0));
        Assert.That(_gauges["channelpool.channel.count"].Instrument?.Unit, Is.EqualTo("{channel}"));
    }

    [Test]
    public async Task Evictions_AreCountedByReason()
    {
        var pool = MeteredPool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();

        await using (var lease = await pool.AcquireAsync())
        {
            lease.MarkBroken();
        }

        await using (var lease = await pool.AcquireAsync())
        {
            lease.Channel.Fault();
        }

        await pool.DrainAsync().Within();

        var reasons = _counters["channelpool.channel.evictions"].GetMeasurementSnapshot()
            .Select(m => (string)m.Tags[ChannelPoolTelemetry.EvictionReasonTag]!).ToList();
        Assert.That(reasons, Has.Exactly(1).EqualTo("broken"));
        Assert.That(reasons, Has.Exactly(1).EqualTo("unusable"));
        Assert.That(reasons.Count(r => r == "shutdown"), Is.EqualTo(Factory.Opened - 2));
    }

    [Test]
    public async Task TimeoutsAndOpenFailures_AreCounted()
    {
        Factory.OpenFailure = () => new IOException("connection refused");
        var pool = MeteredPool(o =>
        {
            o.PoolSize = 1;
            o.MaxConcurrentOpens = 1;
            o.AcquireTimeout = TimeSpan.FromSeconds(1);
            o.Resilience.CircuitBreaker.MinimumThroughput = 1000;
        });

        var waiting = pool.AcquireAsync().AsTask();
        await Eventually.That(() => Factory.OpenAttempts >= 1, "an open failed");
        Time.Advance(TimeSpan.FromSeconds(1));
        Assert.ThrowsAsync<ChannelPoolTimeoutException>(() => waiting.Within());

        Assert.That(_counters["channelpool.channel.timeouts"].GetMeasurementSnapshot().EvaluateAsCounter(), Is.EqualTo(1));
        var failures = _counters["channelpool.channel.open_failures"].GetMeasurementSnapshot();
        Assert.That(failures, Has.Count.GreaterThanOrEqualTo(1));
        Assert.That(failures.Select(f => f.Tags[ChannelPoolTelemetry.ErrorTypeTag]), Has.All.EqualTo("System.IO.IOException"));
    }

    [Test]
    public async Task Clears_AreCountedByReason_AndPausedReadsOneWhilePaused()
    {
        var pool = MeteredPool(o =>
        {
            o.PoolSize = 2;
            o.IsFatalError = static error => error is InvalidDataException;
        });
        await pool.WarmUpAsync().Within();
        await pool.ClearAsync().Within();
        await using (var lease = await pool.AcquireAsync().Within())
        {
            lease.MarkBroken(new InvalidDataException("the service's keys changed"));
        }

        pool.Pause();
        _gauges["channelpool.pool.paused"].RecordObservableInstruments();
        var paused = _gauges["channelpool.pool.paused"].LastMeasurement!.Value;
        pool.Resume();
        _gauges["channelpool.pool.paused"].RecordObservableInstruments();

        var reasons = _counters["channelpool.pool.clears"].GetMeasurementSnapshot().Select(m => m.Tags[ChannelPoolTelemetry.ClearReasonTag]);
        Assert.That(reasons, Is.EqualTo(new[] { "requested", "fatal_error" }));
        Assert.That((paused, _gauges["channelpool.pool.paused"].LastMeasurement!.Value), Is.EqualTo((1, 0)));
        Assert.That(_counters["channelpool.channel.evictions"].GetMeasurementSnapshot().Select(m => m.Tags[ChannelPoolTelemetry.EvictionReasonTag]), Does.Contain("cleared"));
    }

    private static IEnumerable<string> Untagged<T>(MetricCollector<T> collector)
        where T : struct =>
        collector.GetMeasurementSnapshot()
            .Where(m => !m.Tags.ContainsKey(ChannelPoolTelemetry.PoolNameTag))
            .Select(_ => collector.Instrument!.Name);

    private DefaultChannelPool<FakeChannel> MeteredPool(Action<ChannelPoolOptions> configure)
    {
        var options = SmallPool();
        configure(options);
        return CreatePool(options, meterFactory: _services.GetRequiredService<IMeterFactory>());
    }
}
