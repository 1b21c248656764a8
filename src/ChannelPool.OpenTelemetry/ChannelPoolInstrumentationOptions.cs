namespace ChannelPool;

/// <summary>What <c>AddChannelPoolInstrumentation</c> subscribes to, besides every pool's own telemetry.</summary>
public sealed class ChannelPoolInstrumentationOptions
{
    /// <summary>The activity source and meter of pooled WCF proxies' calls (<c>ChannelPool.ServiceModel</c>'s <c>CallTelemetry</c>).</summary>
    internal const string CallTelemetryName = "ChannelPool.ServiceModel";

    /// <summary>
    /// Gets or sets whether every call through a pooled WCF proxy gets a client span and an
    /// <c>rpc.client.call.duration</c> measurement. On by default: a call is what an operator looks at first. Turn it off
    /// where another instrumentation already traces the calls, or to keep only the pool's own telemetry; a call then pays
    /// nothing for it.
    /// </summary>
    public bool RecordCalls { get; set; } = true;
}
