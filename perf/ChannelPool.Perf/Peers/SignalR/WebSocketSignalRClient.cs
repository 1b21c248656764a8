using System.Net.WebSockets;
using ChannelPool.Perf.Clients;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>A SignalR client on the WebSocket transport, opened through the transport's shared handler.</summary>
internal sealed class WebSocketSignalRClient : SignalRClient
{
    private readonly SignalRTransport _transport;
    private readonly Uri _webSocketUri;
    private readonly ClientWebSocket _socket = new();

    /// <summary>Initializes a client for a negotiated connection.</summary>
    /// <param name="transport">The transport: handler and HTTP version.</param>
    /// <param name="connectionId">The connection's public id.</param>
    /// <param name="connectionUri">The hub address with the connection token.</param>
    /// <param name="onNotification">Receives every notification's data.</param>
    /// <param name="keepAlive">The transport's shared keep-alive.</param>
    public WebSocketSignalRClient(
        SignalRTransport transport, string connectionId, Uri connectionUri, NotificationHandler onNotification, SignalRKeepAlive? keepAlive)
        : base(connectionId, onNotification, keepAlive)
    {
        _transport = transport;
        _webSocketUri = new UriBuilder(connectionUri) { Scheme = connectionUri.Scheme == Uri.UriSchemeHttps ? "wss" : "ws" }.Uri;
    }

    /// <inheritdoc/>
    protected override Task OpenAsync(CancellationToken cancellationToken)
    {
        // Hub pings keep the connection alive; WebSocket-level keep-alive would add a timer per socket.
        _socket.Options.KeepAliveInterval = TimeSpan.Zero;
        _socket.Options.HttpVersion = _transport.HttpVersion;
        _socket.Options.HttpVersionPolicy = HttpVersionPolicy.RequestVersionOrLower;

        // Through the shared handler, so its connect callback and connection limits apply to WebSockets too.
        return _socket.ConnectAsync(_webSocketUri, _transport.Http, cancellationToken);
    }

    /// <inheritdoc/>
    protected override async Task ReceiveAsync(HubRecordBuffer received, CancellationToken stopping)
    {
        while (true)
        {
            // A zero-byte receive waits for the next frame without holding a buffer.
            var next = await _socket.ReceiveAsync(Memory<byte>.Empty, stopping).ConfigureAwait(false);
            if (next.MessageType == WebSocketMessageType.Close)
            {
                ThrowUnlessNormal();
                return;
            }

            var result = await _socket.ReceiveAsync(received.GetReadMemory(), stopping).ConfigureAwait(false);
            if (result.MessageType == WebSocketMessageType.Close)
            {
                ThrowUnlessNormal();
                return;
            }

            received.Advance(result.Count);
            if (!DispatchReceived())
            {
                return;
            }
        }
    }

    /// <inheritdoc/>
    protected override ValueTask SendRecordsAsync(ReadOnlyMemory<byte> records, CancellationToken cancellationToken) =>
        _socket.SendAsync(records, WebSocketMessageType.Text, endOfMessage: true, cancellationToken);

    /// <inheritdoc/>
    protected override async Task CloseAsync(CancellationToken cancellationToken)
    {
        // Only our half: the server answers with its close frame, which ends the receive loop.
        if (_socket.State is WebSocketState.Open or WebSocketState.CloseReceived)
        {
            await _socket.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, statusDescription: null, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <inheritdoc/>
    protected override void DisposeTransport() => _socket.Dispose();

    private void ThrowUnlessNormal()
    {
        if (_socket.CloseStatus is { } status && status != WebSocketCloseStatus.NormalClosure)
        {
            throw new IOException($"The server closed the WebSocket of SignalR connection {ConnectionId}: {status} {_socket.CloseStatusDescription}");
        }
    }
}
