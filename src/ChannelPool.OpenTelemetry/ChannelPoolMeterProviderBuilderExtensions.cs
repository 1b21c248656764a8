using ChannelPool;

namespace OpenTelemetry.Metrics;

/// <summary>Subscribes an OpenTelemetry meter provider to every channel pool's metrics.</summary>
public static class ChannelPoolMeterProviderBuilderExtensions
{
    /// <summary>
    /// Collects the <c>channelpool.*</c> instruments of every pool in the process, each tagged with its pool's name, and
    /// <c>rpc.client.call.duration</c> for every call through a pooled WCF proxy (docs/observability.md lists them).
    /// </summary>
    /// <param name="builder">The meter provider builder.</param>
    /// <returns>The builder.</returns>
    public static MeterProviderBuilder AddChannelPoolInstrumentation(this MeterProviderBuilder builder) =>
        AddChannelPoolInstrumentation(builder, configure: null);

    /// <summary>Collects the instruments of <see cref="AddChannelPoolInstrumentation(MeterProviderBuilder)"/>, as <paramref name="configure"/> chooses.</summary>
    /// <param name="builder">The meter provider builder.</param>
    /// <param name="configure">Chooses what to collect; null for everything.</param>
    /// <returns>The builder.</returns>
    public static MeterProviderBuilder AddChannelPoolInstrumentation(this MeterProviderBuilder builder, Action<ChannelPoolInstrumentationOptions>? configure)
    {
        ArgumentNullException.ThrowIfNull(builder);
        var options = new ChannelPoolInstrumentationOptions();
        configure?.Invoke(options);
        builder.AddMeter(ChannelPoolTelemetry.MeterName);
        return options.RecordCalls ? builder.AddMeter(ChannelPoolInstrumentationOptions.CallTelemetryName) : builder;
    }
}
