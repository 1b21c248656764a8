using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Reflection;

namespace ChannelPool.ServiceModel;

/// <summary>
/// The names under which pooled proxies publish one span and one <c>rpc.client.call.duration</c> measurement per
/// service call, following OpenTelemetry's RPC semantic conventions, and the names of the trace context they send.
/// </summary>
/// <remarks>
/// Kept apart from the engine's <see cref="ChannelPoolTelemetry"/> source and meter so that an application can collect
/// pool telemetry without per-call telemetry. With nobody listening to <see cref="ActivitySourceName"/> or
/// <see cref="MeterName"/>, a call reads no clock and allocates nothing for telemetry. <c>docs/observability.md</c>
/// lists every attribute.
/// </remarks>
public static class CallTelemetry
{
    /// <summary>The name of the <see cref="ActivitySource"/> that records a client span per call.</summary>
    public const string ActivitySourceName = "ChannelPool.ServiceModel";

    /// <summary>The name of the <see cref="Meter"/> that records <see cref="CallDurationName"/>.</summary>
    public const string MeterName = "ChannelPool.ServiceModel";

    /// <summary>The histogram of call durations, in seconds, the same value as each call's span duration.</summary>
    public const string CallDurationName = "rpc.client.call.duration";

    /// <summary>The value of <c>rpc.system.name</c> on every span and measurement.</summary>
    public const string RpcSystem = "dotnet_wcf";

    /// <summary>
    /// The span attribute that says how long the call waited for a channel, in seconds: from the call's start until the
    /// pool handed it a channel.
    /// </summary>
    public const string AcquireDurationTag = "channelpool.acquire.duration";

    /// <summary>The span attribute that says whether the channel that served the call was opened while the call waited.</summary>
    public const string WaitedForOpenTag = "channelpool.open.waited";

    /// <summary>The span attribute that says how long the open the call waited for took, in seconds.</summary>
    public const string OpenDurationTag = "channelpool.open.duration";

    /// <summary>The name of the W3C trace context header that carries the caller's trace and span ids.</summary>
    public const string TraceParentHeader = "traceparent";

    /// <summary>The name of the W3C trace context header that carries vendor trace state.</summary>
    public const string TraceStateHeader = "tracestate";

    /// <summary>
    /// The XML namespace of the <see cref="TraceParentHeader"/> and <see cref="TraceStateHeader"/> SOAP headers sent on
    /// bindings without HTTP (net.tcp). On HTTP bindings they travel as HTTP headers instead.
    /// </summary>
    public const string TraceContextNamespace = "urn:channelpool:trace-context";

    internal static readonly ActivitySource Source = new(ActivitySourceName, Version());

    internal static readonly Meter Meter = new(MeterName, Version());

    internal static readonly Histogram<double> CallDuration = Meter.CreateHistogram(
        CallDurationName,
        unit: "s",
        description: "The duration of an outgoing WCF call, from the proxy's call until its result, including the wait for a channel.",
        advice: new InstrumentAdvice<double>
        {
            // The RPC conventions' advice: fine buckets below a second, where a warm WCF call lands.
            HistogramBucketBoundaries = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
        });

    /// <summary>Gets whether anybody listens to the span or the histogram; false means a call pays nothing for telemetry.</summary>
    internal static bool IsListening => Source.HasListeners() || CallDuration.Enabled;

    private static string Version() =>
        typeof(CallTelemetry).Assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion ?? "0.0.0";
}
