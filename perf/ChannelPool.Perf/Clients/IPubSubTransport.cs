namespace ChannelPool.Perf.Clients;

/// <summary>Receives the <c>data</c> of one notification: the UTF-8 JSON value a publisher published.</summary>
/// <param name="data">The published JSON value, exactly as the publisher sent it (whitespace aside).</param>
internal delegate void NotificationHandler(ReadOnlySpan<byte> data);

/// <summary>
/// One way for simulated clients to reach a pub/sub server: our polling duplex, SignalR long polling, SignalR
/// WebSockets, or a raw WebSocket. The scenarios (broadcast, collaboration) are written once against this.
/// </summary>
internal interface IPubSubTransport : IAsyncDisposable
{
    /// <summary>Gets the transport's name as the report shows it, for example <c>polling-duplex (multiple, binary)</c>.</summary>
    string Name { get; }

    /// <summary>Gets the HTTP version the clients speak (HTTP/1.1 unless the transport says otherwise).</summary>
    ClientProtocol Protocol => ClientProtocol.Http11;

    /// <summary>Connects one client. Every notification for a topic it subscribes to goes to <paramref name="onNotification"/>.</summary>
    /// <param name="onNotification">
    /// Called once per notification, in order, on a thread-pool thread; it must be quick and must not block. It is never
    /// called for the client's own publishes.
    /// </param>
    Task<IPubSubClient> ConnectAsync(NotificationHandler onNotification, CancellationToken cancellationToken);
}

/// <summary>A connected simulated client.</summary>
internal interface IPubSubClient : IAsyncDisposable
{
    /// <summary>Subscribes to <paramref name="topic"/>; completes once the server has taken the subscription.</summary>
    /// <returns>A task that completes when the server has the subscription.</returns>
    Task SubscribeAsync(string topic, CancellationToken cancellationToken);

    /// <summary>Publishes <paramref name="data"/> to every other subscriber of <paramref name="topic"/> (not back to this client).</summary>
    /// <param name="data">One UTF-8 JSON value.</param>
    /// <returns>A task that completes when the server has taken the publish.</returns>
    Task PublishAsync(string topic, ReadOnlyMemory<byte> data, CancellationToken cancellationToken);

    /// <summary>Publishes several values to <paramref name="topic"/>, in order; in one request where the transport can.</summary>
    /// <param name="batch">The values, each one UTF-8 JSON value.</param>
    /// <returns>A task that completes when the server has taken every publish.</returns>
    async Task PublishAsync(string topic, IReadOnlyList<ReadOnlyMemory<byte>> batch, CancellationToken cancellationToken)
    {
        foreach (var data in batch)
        {
            await PublishAsync(topic, data, cancellationToken);
        }
    }
}
