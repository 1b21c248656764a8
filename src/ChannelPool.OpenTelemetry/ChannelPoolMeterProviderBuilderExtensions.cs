using ChannelPool;

namespace OpenTelemetry.Metrics;

/// <summary>Subscribes an OpenTelemetry meter provider to every channel pool's metrics.</summary>
public static class ChannelPoolMeterProviderBuilderExtensions
{
    /// <summary>
    /// Collects the <c>channelpool.*</c> instruments of every pool in the process, each tagged with its pool's name
    /// (docs/observability.md lists them).
    /// </summary>
    /// <param name="builder">The meter provider builder.</param>
    /// <returns>The builder.</returns>
    public static MeterProviderBuilder AddChannelPoolInstrumentation(this MeterProviderBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        return builder.AddMeter(ChannelPoolTelemetry.MeterName);
    }
}
