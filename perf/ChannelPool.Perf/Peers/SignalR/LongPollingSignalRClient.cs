using System.Net;
using ChannelPool.Perf.Clients;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>
/// A SignalR client on the long polling transport: one GET outstanding at a time, which the server answers with whatever
/// messages it holds (or empty after its poll timeout), and a POST per send.
/// </summary>
internal sealed class LongPollingSignalRClient : SignalRClient
{
    private readonly SignalRTransport _transport;
    private readonly Uri _connectionUri;

    /// <summary>Initializes a client for a negotiated connection.</summary>
    /// <param name="transport">The transport: handler and HTTP version.</param>
    /// <param name="connectionId">The connection's public id.</param>
    /// <param name="connectionUri">The hub address with the connection token.</param>
    /// <param name="onNotification">Receives every notification's data.</param>
    public LongPollingSignalRClient(SignalRTransport transport, string connectionId, Uri connectionUri, NotificationHandler onNotification)
        : base(connectionId, onNotification, keepAlive: null)
    {
        _transport = transport;
        _connectionUri = connectionUri;
    }

    /// <inheritdoc/>
    protected override async Task OpenAsync(CancellationToken cancellationToken)
    {
        // The server answers the first poll at once and empty: it starts the connection. Only later polls wait for messages.
        using var request = _transport.CreateRequest(HttpMethod.Get, _connectionUri);
        using var response = await _transport.Http.SendAsync(request, cancellationToken).ConfigureAwait(false);
        if (response.StatusCode != HttpStatusCode.OK)
        {
            throw new IOException($"The first poll of SignalR connection {ConnectionId} failed: HTTP {(int)response.StatusCode} {response.ReasonPhrase}.");
        }
    }

    /// <inheritdoc/>
    protected override async Task ReceiveAsync(HubRecordBuffer received, CancellationToken stopping)
    {
        while (true)
        {
            using var request = _transport.CreateRequest(HttpMethod.Get, _connectionUri);
            using var response = await _transport.Http.SendAsync(request, stopping).ConfigureAwait(false);
            if (response.StatusCode == HttpStatusCode.NoContent)
            {
                // The server's way of saying the connection is over: closed, deleted, or replaced by another poll.
                return;
            }

            if (response.StatusCode != HttpStatusCode.OK)
            {
                throw new IOException($"A poll of SignalR connection {ConnectionId} failed: HTTP {(int)response.StatusCode} {response.ReasonPhrase}.");
            }

            // A poll that timed out is empty; reading it would only rent a buffer for nothing.
            if (response.Content.Headers.ContentLength == 0)
            {
                continue;
            }

            var body = await response.Content.ReadAsStreamAsync(stopping).ConfigureAwait(false);
            await using (body.ConfigureAwait(false))
            {
                int read;
                while ((read = await body.ReadAsync(received.GetReadMemory(), stopping).ConfigureAwait(false)) > 0)
                {
                    received.Advance(read);
                    if (!DispatchReceived())
                    {
                        return;
                    }
                }
            }

            received.ReleaseIfEmpty();
        }
    }

    /// <inheritdoc/>
    protected override async ValueTask SendRecordsAsync(ReadOnlyMemory<byte> records, CancellationToken cancellationToken)
    {
        using var request = _transport.CreateRequest(HttpMethod.Post, _connectionUri);
        request.Content = new ReadOnlyMemoryContent(records);
        using var response = await _transport.Http.SendAsync(request, cancellationToken).ConfigureAwait(false);
        if (response.StatusCode != HttpStatusCode.OK)
        {
            throw new IOException($"Sending on SignalR connection {ConnectionId} failed: HTTP {(int)response.StatusCode} {response.ReasonPhrase}.");
        }
    }

    /// <inheritdoc/>
    protected override async Task CloseAsync(CancellationToken cancellationToken)
    {
        // The server answers 202 and ends the outstanding poll with a 204, which ends the receive loop.
        using var request = _transport.CreateRequest(HttpMethod.Delete, _connectionUri);
        using var response = await _transport.Http.SendAsync(request, cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc/>
    protected override void DisposeTransport()
    {
    }
}
