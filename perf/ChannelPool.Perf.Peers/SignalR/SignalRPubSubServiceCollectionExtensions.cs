using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>Registers the SignalR pub/sub peer.</summary>
internal static class SignalRPubSubServiceCollectionExtensions
{
    /// <summary>
    /// The largest JSON payload a publish may carry: the polling duplex pub/sub service's <c>MaxMessageSize</c>, so
    /// both peers accept the same messages.
    /// </summary>
    public const int MaxPayloadBytes = 64 * 1024;

    /// <summary>Room for the invocation around the payload: ids, the method name and a topic of 256 escaped characters.</summary>
    public const int InvocationEnvelopeBytes = 4 * 1024;

    /// <summary>Adds SignalR with the JSON hub protocol and SignalR's defaults, except for the message size limit.</summary>
    public static IServiceCollection AddSignalRPubSub(this IServiceCollection services)
    {
        // The 32 KiB default would refuse publishes the polling duplex peer takes, capping payload-size runs artificially.
        // Everything else keeps SignalR's defaults: one invocation at a time per client, 15 s server pings, a 30 s
        // client timeout, the 15 s handshake timeout.
        services.AddSignalR(options => options.MaximumReceiveMessageSize = MaxPayloadBytes + InvocationEnvelopeBytes);
        return services;
    }
}
