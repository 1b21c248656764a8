using ChannelPool;

namespace OpenTelemetry.Trace;

/// <summary>Subscribes an OpenTelemetry tracer provider to every channel pool's spans.</summary>
public static class ChannelPoolTracerProviderBuilderExtensions
{
    /// <summary>
    /// Records a <c>channelpool.channel.open</c> span for every channel open attempt of every pool, and a client span for
    /// every call through a pooled WCF proxy.
    /// </summary>
    /// <param name="builder">The tracer provider builder.</param>
    /// <returns>The builder.</returns>
    public static TracerProviderBuilder AddChannelPoolInstrumentation(this TracerProviderBuilder builder) =>
        AddChannelPoolInstrumentation(builder, configure: null);

    /// <summary>Records the spans of <see cref="AddChannelPoolInstrumentation(TracerProviderBuilder)"/>, as <paramref name="configure"/> chooses.</summary>
    /// <param name="builder">The tracer provider builder.</param>
    /// <param name="configure">Chooses what to record; null for everything.</param>
    /// <returns>The builder.</returns>
    public static TracerProviderBuilder AddChannelPoolInstrumentation(this TracerProviderBuilder builder, Action<ChannelPoolInstrumentationOptions>? configure)
    {
        ArgumentNullException.ThrowIfNull(builder);
        var options = new ChannelPoolInstrumentationOptions();
        configure?.Invoke(options);
        builder.AddSource(ChannelPoolTelemetry.ActivitySourceName);
        return options.RecordCalls ? builder.AddSource(ChannelPoolInstrumentationOptions.CallTelemetryName) : builder;
    }
}
