using System.Collections.Concurrent;
using System.Diagnostics.Metrics;

namespace ChannelPool.Tests.Telemetry;

public class MetricsTests : PoolTestBase
{
    private readonly ConcurrentQueue<(string Instrument, string? Unit, double Value, Dictionary<string, object?> Tags)> _measurements = new();
    private MeterListener _listener = null!;

    [SetUp]
    public void Listen()
    {
        // NUnit reuses one fixture instance for every test in the class.
        _measurements.Clear();
        var poolName = TestContext.CurrentContext.Test.Name;
        _listener = new MeterListener
        {
            InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == ChannelPoolTelemetry.MeterName
                    && instrument.Meter.Tags?.Any(t => t.Key == ChannelPoolTelemetry.PoolNameTag && Equals(t.Value, poolName)) == true)
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            },
        };
        _listener.SetMeasurementEventCallback<double>((i, v, tags, _) => Record(i, v, tags));
        _listener.SetMeasurementEventCallback<long>((i, v, tags, _) => Record(i, v, tags));
        _listener.SetMeasurementEventCallback<int>((i, v, tags, _) => Record(i, v, tags));
        _listener.Start();
    }

    [TearDown]
    public void StopListening() => _listener.Dispose();

    [Test]
    public async Task Histograms_RecordCreateWaitAndUseTime_InSeconds_TaggedWithThePoolName()
    {
        var pool = CreatePool(o => o.PoolSize = 3);
        await pool.WarmUpAsync().Within();

        await using (await pool.AcquireAsync())
        {
            Time.Advance(TimeSpan.FromMilliseconds(250));
        }

        Assert.That(Measured("channelpool.channel.create_time"), Has.Count.EqualTo(3));
        Assert.That(Measured("channelpool.channel.wait_time"), Has.Count.EqualTo(1));
        var use = Measured("channelpool.channel.use_time");
        Assert.That(use, Has.Count.EqualTo(1));
        Assert.That(use[0].Value, Is.EqualTo(0.25).Within(1e-9), "use time follows the (fake) clock");
        Assert.That(_measurements.Where(m => m.Instrument.EndsWith("_time", StringComparison.Ordinal)), Has.All.Matches<(string, string? Unit, double, Dictionary<string, object?> Tags)>(
            m => m.Unit == "s" && Equals(m.Tags[ChannelPoolTelemetry.PoolNameTag], pool.Name)));
    }

    [Test]
    public async Task ChannelCount_ReportsIdleUsedAndOpening_AndTheLimits()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 4;
            o.MaxChannels = 8;
        });
        await pool.WarmUpAsync().Within();
        await using var lease = await pool.AcquireAsync();

        _listener.RecordObservableInstruments();

        var counts = Measured("channelpool.channel.count").ToDictionary(m => (string)m.Tags[ChannelPoolTelemetry.StateTag]!, m => m.Value);
        Assert.That(counts, Is.EquivalentTo(new Dictionary<string, double> { ["idle"] = 3, ["used"] = 1, ["opening"] = 0 }));
        Assert.That(Measured("channelpool.channel.max").Single().Value, Is.EqualTo(8));
        Assert.That(Measured("channelpool.channel.idle.max").Single().Value, Is.EqualTo(4));
        Assert.That(Measured("channelpool.channel.idle.min").Single().Value, Is.EqualTo(2));
        Assert.That(Measured("channelpool.channel.pending_requests").Single().Value, Is.EqualTo(0));
        Assert.That(Measured("channelpool.channel.count").Select(m => m.Unit), Has.All.EqualTo("{channel}"));
    }

    [Test]
    public async Task Evictions_AreCountedByReason()
    {
        var pool = CreatePool(o => o.PoolSize = 2);
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

        var reasons = Measured("channelpool.channel.evictions").Select(m => (string)m.Tags[ChannelPoolTelemetry.EvictionReasonTag]!).ToList();
        Assert.That(reasons, Has.Exactly(1).EqualTo("broken"));
        Assert.That(reasons, Has.Exactly(1).EqualTo("unusable"));
        Assert.That(reasons.Count(r => r == "shutdown"), Is.EqualTo(Factory.Opened - 2));
    }

    [Test]
    public async Task TimeoutsAndOpenFailures_AreCounted()
    {
        Factory.OpenFailure = () => new IOException("connection refused");
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxConcurrentOpens = 1;
            o.AcquireTimeout = TimeSpan.FromSeconds(1);
            o.Resilience.BreakerMinimumThroughput = 1000;
        });

        var waiting = pool.AcquireAsync().AsTask();
        await Eventually.That(() => Factory.OpenAttempts >= 1, "an open failed");
        Time.Advance(TimeSpan.FromSeconds(1));
        Assert.ThrowsAsync<ChannelPoolTimeoutException>(() => waiting.Within());

        Assert.That(Measured("channelpool.channel.timeouts").Sum(m => m.Value), Is.EqualTo(1));
        var failures = Measured("channelpool.channel.open_failures");
        Assert.That(failures, Has.Count.GreaterThanOrEqualTo(1));
        Assert.That(failures.Select(f => f.Tags[ChannelPoolTelemetry.ErrorTypeTag]), Has.All.EqualTo("System.IO.IOException"));
    }

    private List<(string Instrument, string? Unit, double Value, Dictionary<string, object?> Tags)> Measured(string instrument) =>
        _measurements.Where(m => m.Instrument == instrument).ToList();

    private void Record<T>(Instrument instrument, T value, ReadOnlySpan<KeyValuePair<string, object?>> tags)
        where T : struct
    {
        var tagMap = new Dictionary<string, object?>();
        foreach (var tag in tags)
        {
            tagMap[tag.Key] = tag.Value;
        }

        Assert.That(tagMap, Does.ContainKey(ChannelPoolTelemetry.PoolNameTag), $"{instrument.Name} carries the pool name");
        _measurements.Enqueue((instrument.Name, instrument.Unit, Convert.ToDouble(value, System.Globalization.CultureInfo.InvariantCulture), tagMap));
    }
}
