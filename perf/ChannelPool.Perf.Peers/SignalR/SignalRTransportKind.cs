namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>The SignalR transport a simulated client uses.</summary>
internal enum SignalRTransportKind
{
    /// <summary>Long polling: one GET held open by the server per client, a POST per message sent.</summary>
    LongPolling,

    /// <summary>One WebSocket per client.</summary>
    WebSockets,
}
