using ChannelPool.Perf.Peers.Floor;
using ChannelPool.Perf.Peers.SignalR;

namespace ChannelPool.Perf.Peers;

/// <summary>
/// The peers this console adds to the perf console: ASP.NET Core SignalR over long polling and WebSockets (the official
/// client, what a user would pick instead of our polling duplex), and the bare Kestrel long poll the floor scenario and
/// broadcast's <c>--transport floor</c> measure a delivery against.
/// </summary>
internal static class PeerConsole
{
    public static PerfPeers Peers { get; } = new()
    {
        Transports =
        [
            new(PubSubTransportChoice.SignalRLongPolling, InAll: true, (context, protocols) => protocols.Select(p => (IPubSubTransport)new SignalRTransport(
                new Uri(context.BaseAddress(p), "signalr"), SignalRTransportKind.LongPolling, context.HandlerFor(p), p.RequestVersion()))),

            // Its clients hold a connection each on either protocol, so it runs once, on HTTP/1.1.
            new(PubSubTransportChoice.SignalRWebSockets, InAll: true, (context, _) => [new SignalRTransport(new Uri(context.Server.Endpoints.Http, "signalr"), SignalRTransportKind.WebSockets, context.Handler)]),
            new(PubSubTransportChoice.Floor, InAll: false, (context, protocols) => protocols.Select(p => (IPubSubTransport)new FloorTransport(
                context.HttpFor(p), new Uri(context.BaseAddress(p), "floor"), p == ClientProtocol.Http2 ? "floor (HTTP/2)" : PubSubTransportChoice.Floor, p))),
        ],
        Scenarios = [new FloorScenario()],
        AddServices = (builder, _) => builder.Services.AddSignalRPubSub(),
        MapEndpoints = (app, settings) =>
        {
            app.MapSignalRPubSub("/signalr", settings.PollTimeout);
            app.MapFloor("/floor", settings.PollTimeout);
        },
        Program = typeof(PeerConsole).Assembly,
    };
}
