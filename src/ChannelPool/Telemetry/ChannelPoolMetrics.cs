using System.Diagnostics.Metrics;

namespace ChannelPool;

/// <summary>
/// One pool's instruments. Each pool owns its <see cref="Meter"/>, so observable instruments report exactly that pool
/// and go away with it.
/// </summary>
internal sealed class ChannelPoolMetrics : IDisposable
{
    // Bucket boundaries in seconds, from a fast lease (microseconds) to a slow secure handshake (seconds).
    private static readonly IReadOnlyList<double> SecondsBuckets =
        [0.000_01, 0.000_05, 0.000_1, 0.000_5, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

    private readonly Meter _meter;
    private readonly bool _ownsMeter;
    private readonly KeyValuePair<string, object?> _poolTag;
    private readonly Histogram<double> _createTime;
    private readonly Histogram<double> _waitTime;
    private readonly Histogram<double> _useTime;
    private readonly Counter<long> _timeouts;
    private readonly Counter<long> _evictions;
    private readonly Counter<long> _openFailures;
    private readonly Counter<long> _leaks;
    private readonly Counter<long> _clears;
    private readonly Counter<long> _awaitedOpens;

    public ChannelPoolMetrics(string poolName, Func<ChannelPoolSnapshot> snapshot, Func<(int IdleTarget, int RefillThreshold, int MaxChannels)> limits, IMeterFactory? meterFactory)
    {
        _poolTag = new(ChannelPoolTelemetry.PoolNameTag, poolName);

        // The pool tag on the meter itself keeps IMeterFactory, which caches meters by name, version and tags, from
        // handing two pools the same meter and so the same observable instruments.
        var options = new MeterOptions(ChannelPoolTelemetry.MeterName) { Version = ChannelPoolTelemetry.Version, Tags = [_poolTag] };
        _ownsMeter = meterFactory is null;
        _meter = meterFactory?.Create(options) ?? new Meter(options);
        var poolTag = _poolTag;

        _meter.CreateObservableUpDownCounter<int>(
            "channelpool.channel.count",
            () =>
            {
                var s = snapshot();
                return
                [
                    new(s.Idle, poolTag, new(ChannelPoolTelemetry.StateTag, "idle")),
                    new(s.Leased, poolTag, new(ChannelPoolTelemetry.StateTag, "used")),
                    new(s.Opening, poolTag, new(ChannelPoolTelemetry.StateTag, "opening")),
                ];
            },
            unit: "{channel}",
            description: "The number of channels in each state: idle in the pool, used by a caller, or opening.");
        _meter.CreateObservableUpDownCounter<int>(
            "channelpool.channel.max",
            () => new Measurement<int>(limits().MaxChannels, poolTag),
            unit: "{channel}",
            description: "The most channels the pool may have opening, idle and leased at once (MaxChannels).");
        _meter.CreateObservableUpDownCounter<int>(
            "channelpool.channel.idle.max",
            () => new Measurement<int>(limits().IdleTarget, poolTag),
            unit: "{channel}",
            description: "The idle count a refill fills the pool back up to: the idle target in force (PoolSize when fixed). A refill does not count leased channels, so when callers return theirs the idle count can exceed it, up to MaxChannels, until channels are evicted.");
        _meter.CreateObservableUpDownCounter<int>(
            "channelpool.channel.idle.min",
            () => new Measurement<int>(limits().RefillThreshold, poolTag),
            unit: "{channel}",
            description: "The idle count at or below which a refill starts (RefillThreshold, or its share of an adaptive idle target).");
        _meter.CreateObservableUpDownCounter<int>(
            "channelpool.channel.idle.target",
            () => new Measurement<int>(limits().IdleTarget, poolTag),
            unit: "{channel}",
            description: "The idle target: PoolSize when fixed; when adaptive, what the pool decided from recent demand and open times.");
        _meter.CreateObservableUpDownCounter<int>(
            "channelpool.channel.pending_requests",
            () => new Measurement<int>(snapshot().Waiting, poolTag),
            unit: "{request}",
            description: "The number of callers waiting for a channel.");

        _meter.CreateObservableUpDownCounter<int>(
            "channelpool.pool.paused",
            () => new Measurement<int>(snapshot().IsPaused ? 1 : 0, poolTag),
            unit: "{pool}",
            description: "1 while the pool is paused (it opens and hands out nothing), else 0.");

        _timeouts = _meter.CreateCounter<long>(
            "channelpool.channel.timeouts", unit: "{timeout}", description: "Acquires that timed out waiting for a channel.");
        _evictions = _meter.CreateCounter<long>(
            "channelpool.channel.evictions", unit: "{channel}", description: "Channels the pool closed, by reason.");
        _openFailures = _meter.CreateCounter<long>(
            "channelpool.channel.open_failures", unit: "{failure}", description: "Channel open attempts that failed, by error type.");
        _leaks = _meter.CreateCounter<long>(
            "channelpool.channel.leaks", unit: "{lease}", description: "Leases held longer than LeakDetectionThreshold, each counted once, when found.");
        _clears = _meter.CreateCounter<long>(
            "channelpool.pool.clears", unit: "{clear}", description: "Times the pool retired every channel opened so far, by reason: requested or fatal_error.");
        _awaitedOpens = _meter.CreateCounter<long>(
            "channelpool.channel.awaited_opens",
            unit: "{lease}",
            description: "Leases that waited for an open: they found nothing idle and got a channel straight from its open. Zero while the pre-opened channels keep ahead of demand.");

        var advice = new InstrumentAdvice<double> { HistogramBucketBoundaries = SecondsBuckets };
        _createTime = _meter.CreateHistogram(
            "channelpool.channel.create_time", unit: "s", description: "The time it took to open a channel.", tags: null, advice: advice);
        _waitTime = _meter.CreateHistogram(
            "channelpool.channel.wait_time", unit: "s", description: "The time a caller waited to obtain a channel.", tags: null, advice: advice);
        _useTime = _meter.CreateHistogram(
            "channelpool.channel.use_time", unit: "s", description: "The time between a channel's lease and its release.", tags: null, advice: advice);
    }

    public bool WaitTimeEnabled => _waitTime.Enabled;

    public bool UseTimeEnabled => _useTime.Enabled;

    public void RecordCreateTime(TimeSpan elapsed) => _createTime.Record(elapsed.TotalSeconds, _poolTag);

    public void RecordWaitTime(TimeSpan elapsed) => _waitTime.Record(elapsed.TotalSeconds, _poolTag);

    public void RecordUseTime(TimeSpan elapsed) => _useTime.Record(elapsed.TotalSeconds, _poolTag);

    public void Timeout() => _timeouts.Add(1, _poolTag);

    public void AwaitedOpen(int leases) => _awaitedOpens.Add(leases, _poolTag);

    public void Evicted(EvictionReason reason) =>
        _evictions.Add(1, _poolTag, new(ChannelPoolTelemetry.EvictionReasonTag, ChannelPoolTelemetry.ToTagValue(reason)));

    public void OpenFailed(Exception error) =>
        _openFailures.Add(1, _poolTag, new(ChannelPoolTelemetry.ErrorTypeTag, error.GetType().FullName));

    public void LeakFound() => _leaks.Add(1, _poolTag);

    public void Cleared(bool fatalError) =>
        _clears.Add(1, _poolTag, new(ChannelPoolTelemetry.ClearReasonTag, fatalError ? "fatal_error" : "requested"));

    public void Dispose()
    {
        if (_ownsMeter)
        {
            _meter.Dispose();
        }
    }
}
