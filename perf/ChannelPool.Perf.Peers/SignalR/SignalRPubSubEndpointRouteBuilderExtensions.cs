using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http.Connections;
using Microsoft.AspNetCore.Routing;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>Maps the SignalR pub/sub peer.</summary>
internal static class SignalRPubSubEndpointRouteBuilderExtensions
{
    /// <summary>Maps <see cref="SignalRPubSubHub"/> at <paramref name="pattern"/> with the long polling and WebSocket transports.</summary>
    /// <param name="pattern">The hub's path, for example <c>/signalr</c>.</param>
    /// <param name="pollTimeout">How long the server holds a long poll with nothing to send (SignalR's default is 90 s).</param>
    public static HubEndpointConventionBuilder MapSignalRPubSub(this IEndpointRouteBuilder endpoints, string pattern, TimeSpan pollTimeout) =>
        endpoints.MapHub<SignalRPubSubHub>(pattern, options =>
        {
            options.Transports = HttpTransportType.LongPolling | HttpTransportType.WebSockets;
            options.LongPolling.PollTimeout = pollTimeout;
        });
}
