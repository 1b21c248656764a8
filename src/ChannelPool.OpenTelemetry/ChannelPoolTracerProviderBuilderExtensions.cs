using ChannelPool;

namespace OpenTelemetry.Trace;

/// <summary>Subscribes an OpenTelemetry tracer provider to every channel pool's spans.</summary>
public static class ChannelPoolTracerProviderBuilderExtensions
{
    /// <summary>Records a <c>channelpool.channel.open</c> span for every channel open attempt of every pool.</summary>
    /// <param name="builder">The tracer provider builder.</param>
    /// <returns>The builder.</returns>
    public static TracerProviderBuilder AddChannelPoolInstrumentation(this TracerProviderBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        return builder.AddSource(ChannelPoolTelemetry.ActivitySourceName);
    }
}
