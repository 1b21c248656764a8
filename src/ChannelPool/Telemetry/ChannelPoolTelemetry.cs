using System.Diagnostics;
using System.Reflection;

namespace ChannelPool;

/// <summary>
/// The names under which pools publish metrics and traces. Subscribe to <see cref="MeterName"/> and
/// <see cref="ActivitySourceName"/>, for example through OpenTelemetry's <c>AddMeter</c> and <c>AddSource</c>.
/// </summary>
/// <remarks>
/// Instruments follow the shape of OpenTelemetry's database connection-pool semantic conventions
/// (<c>db.client.connection.*</c>) under this library's own <c>channelpool.</c> prefix. Every measurement carries
/// the <see cref="PoolNameTag"/> tag. <c>docs/observability.md</c> lists every instrument.
/// </remarks>
public static class ChannelPoolTelemetry
{
    /// <summary>The name of the <see cref="System.Diagnostics.Metrics.Meter"/> every pool records on.</summary>
    public const string MeterName = "ChannelPool";

    /// <summary>The name of the <see cref="ActivitySource"/> that traces channel opens.</summary>
    public const string ActivitySourceName = "ChannelPool";

    /// <summary>The tag that carries the pool's name on every measurement and span.</summary>
    public const string PoolNameTag = "channelpool.pool.name";

    /// <summary>The tag that says which state a <c>channelpool.channel.count</c> measurement counts: idle, used or opening.</summary>
    public const string StateTag = "channelpool.channel.state";

    /// <summary>
    /// The tag that says why a channel was evicted: lifetime, unusable, broken, shutdown, single_use, cleared or
    /// idle_timeout.
    /// </summary>
    public const string EvictionReasonTag = "channelpool.eviction.reason";

    /// <summary>The tag that says why a pool was cleared: <c>requested</c> (a call to clear it) or <c>fatal_error</c>.</summary>
    public const string ClearReasonTag = "channelpool.clear.reason";

    /// <summary>The tag that names the exception type of a failed open, following OpenTelemetry's <c>error.type</c>.</summary>
    public const string ErrorTypeTag = "error.type";

    /// <summary>The tag that carries a channel's pool-wide id on its open span.</summary>
    public const string ChannelIdTag = "channelpool.channel.id";

    /// <summary>The name of the span recorded for each channel open attempt.</summary>
    public const string OpenActivityName = "channelpool.channel.open";

    internal static readonly string Version =
        typeof(ChannelPoolTelemetry).Assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion ?? "0.0.0";

    internal static readonly ActivitySource ActivitySource = new(ActivitySourceName, Version);

    internal static string ToTagValue(EvictionReason reason) => reason switch
    {
        EvictionReason.LifetimeExpired => "lifetime",
        EvictionReason.Unusable => "unusable",
        EvictionReason.Broken => "broken",
        EvictionReason.Shutdown => "shutdown",
        EvictionReason.SingleUse => "single_use",
        EvictionReason.Cleared => "cleared",
        EvictionReason.IdleTimeout => "idle_timeout",
        _ => "unknown",
    };
}
