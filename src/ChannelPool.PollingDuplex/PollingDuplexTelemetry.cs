using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Reflection;

namespace ChannelPool.PollingDuplex;

/// <summary>The names the polling duplex server publishes metrics and traces under.</summary>
public static class PollingDuplexTelemetry
{
    /// <summary>The meter every endpoint records on.</summary>
    public const string MeterName = "ChannelPool.PollingDuplex";

    /// <summary>The activity source of session opens and received messages.</summary>
    public const string ActivitySourceName = "ChannelPool.PollingDuplex";

    /// <summary>The tag naming the endpoint (the pattern it is mapped at) on every measurement and span.</summary>
    public const string EndpointTag = "pollingduplex.endpoint";

    internal static readonly string Version =
        typeof(PollingDuplexTelemetry).Assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion ?? "0.0.0";

    internal static readonly ActivitySource ActivitySource = new(ActivitySourceName, Version);
}

/// <summary>
/// One endpoint's instruments: sessions by state, polls, deliveries, redeliveries, drops and poll hold time. The
/// endpoint code records polls and received messages for every store; the rest are its store's to record.
/// </summary>
internal sealed class PollingDuplexMetrics : IDisposable
{
    private static readonly string[] OutcomeTags = ["messages", "empty", "superseded", "ended", "aborted"];
    private readonly Meter _meter;
    private readonly KeyValuePair<string, object?> _endpoint;
    private readonly Counter<long> _sessionsOpened;
    private readonly Counter<long> _sessionsEnded;
    private readonly Counter<long> _polls;
    private readonly Counter<long> _delivered;
    private readonly Counter<long> _redelivered;
    private readonly Counter<long> _received;
    private readonly Counter<long> _dropped;
    private readonly Histogram<double> _pollDuration;

    public PollingDuplexMetrics(string endpoint, Func<(int Pending, int Active)?> sessions)
    {
        _endpoint = new(PollingDuplexTelemetry.EndpointTag, endpoint);
        var tag = _endpoint;
        _meter = new Meter(new MeterOptions(PollingDuplexTelemetry.MeterName) { Version = PollingDuplexTelemetry.Version, Tags = [_endpoint] });
        _meter.CreateObservableUpDownCounter<int>(
            "pollingduplex.sessions",
            () => sessions() is { } counts
                ? [new Measurement<int>(counts.Pending, tag, new("pollingduplex.session.state", "pending")), new Measurement<int>(counts.Active, tag, new("pollingduplex.session.state", "active"))]
                : [],
            unit: "{session}",
            description: "Sessions by state: pending (opened, not yet polled) and active.");
        _sessionsOpened = _meter.CreateCounter<long>("pollingduplex.sessions.opened", "{session}", "Sessions opened.");
        _sessionsEnded = _meter.CreateCounter<long>("pollingduplex.sessions.ended", "{session}", "Sessions ended, by reason.");
        _polls = _meter.CreateCounter<long>("pollingduplex.polls", "{poll}", "Polls answered, by outcome.");
        _delivered = _meter.CreateCounter<long>("pollingduplex.messages.delivered", "{message}", "Frames sent to clients for the first time.");
        _redelivered = _meter.CreateCounter<long>("pollingduplex.messages.redelivered", "{message}", "Frames sent again because no poll acknowledged them.");
        _received = _meter.CreateCounter<long>("pollingduplex.messages.received", "{message}", "Client messages handed to the application.");
        _dropped = _meter.CreateCounter<long>("pollingduplex.messages.dropped", "{message}", "Messages that did not fit a full session buffer.");
        _pollDuration = _meter.CreateHistogram(
            "pollingduplex.poll.duration",
            unit: "s",
            description: "How long the server held each poll.",
            tags: null,
            advice: new InstrumentAdvice<double> { HistogramBucketBoundaries = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 15, 30] });
    }

    public void Opened() => _sessionsOpened.Add(1, _endpoint);

    public void Ended(DuplexSessionEndReason reason) => _sessionsEnded.Add(1, _endpoint, new("pollingduplex.session.end_reason", reason.ToString()));

    public void Poll(PollOutcome outcome, TimeSpan held)
    {
        _polls.Add(1, _endpoint, new("pollingduplex.poll.outcome", OutcomeTags[(int)outcome]));
        _pollDuration.Record(held.TotalSeconds, _endpoint);
    }

    public void Delivered(long count = 1) => _delivered.Add(count, _endpoint);

    public void Redelivered(long count = 1) => _redelivered.Add(count, _endpoint);

    public void Received() => _received.Add(1, _endpoint);

    public void Dropped(long count = 1) => _dropped.Add(count, _endpoint);

    public void Dispose() => _meter.Dispose();
}
