using System.Net;
using System.Text.Json;
using ChannelPool.Perf.Clients;
using Microsoft.AspNetCore.SignalR;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>
/// Simulated clients of <see cref="SignalRPubSubHub"/> that speak SignalR's raw protocol: negotiate, then long polling
/// or a WebSocket, the JSON hub protocol on top. The official client package cannot be restored here, and a raw client
/// is also lighter, which matters at 15,000 clients in one process. Every client goes through the caller's handler.
/// </summary>
internal sealed class SignalRTransport : IPubSubTransport
{
    private SignalRKeepAlive? _keepAlive;

    /// <summary>Initializes the transport.</summary>
    /// <param name="hubUri">The hub's address, for example <c>http://127.0.0.1:5000/signalr</c>.</param>
    /// <param name="kind">Long polling or WebSockets.</param>
    /// <param name="handler">The handler every request and WebSocket goes through; shared, never disposed here.</param>
    /// <param name="httpVersion">The HTTP version to ask for (HTTP/1.1 unless given); the server may answer with a lower one.</param>
    /// <exception cref="ArgumentException"><paramref name="hubUri"/> is not an absolute HTTP or HTTPS address without a query.</exception>
    public SignalRTransport(Uri hubUri, SignalRTransportKind kind, HttpMessageHandler handler, Version? httpVersion = null)
    {
        ArgumentNullException.ThrowIfNull(hubUri);
        ArgumentNullException.ThrowIfNull(handler);
        if (!hubUri.IsAbsoluteUri || (hubUri.Scheme != Uri.UriSchemeHttp && hubUri.Scheme != Uri.UriSchemeHttps) || hubUri.Query.Length > 0)
        {
            throw new ArgumentException($"The hub address must be an absolute http or https address without a query, not '{hubUri}'.", nameof(hubUri));
        }

        HubUri = new Uri(hubUri.GetLeftPart(UriPartial.Path).TrimEnd('/'));
        Kind = kind;
        Http = new HttpMessageInvoker(handler, disposeHandler: false);
        HttpVersion = httpVersion ?? System.Net.HttpVersion.Version11;

        // Long polling needs no pings: SignalR treats it as kept alive by its polls and applies no client timeout.
        _keepAlive = kind == SignalRTransportKind.WebSockets ? new SignalRKeepAlive() : null;
    }

    /// <inheritdoc/>
    public string Name => Kind == SignalRTransportKind.LongPolling ? "signalr-longpolling" : "signalr-websockets";

    /// <summary>Gets the hub's address, without a trailing slash.</summary>
    public Uri HubUri { get; }

    /// <summary>Gets the transport the clients use.</summary>
    public SignalRTransportKind Kind { get; }

    /// <summary>
    /// Gets the longest a WebSocket client stays silent before it pings the server: 15 s unless set, as SignalR's own
    /// clients do. <see cref="Timeout.InfiniteTimeSpan"/> turns pings off; the server then never arms its client timeout.
    /// Long polling clients never ping.
    /// </summary>
    public TimeSpan PingInterval
    {
        get => _keepAlive?.PingInterval ?? Timeout.InfiniteTimeSpan;
        init
        {
            if (value == Timeout.InfiniteTimeSpan)
            {
                _keepAlive?.Dispose();
                _keepAlive = null;
                return;
            }

            ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(value, TimeSpan.Zero);
            if (_keepAlive is not null)
            {
                _keepAlive.PingInterval = value;
            }
        }
    }

    /// <summary>Gets how many WebSocket clients the shared keep-alive pings.</summary>
    internal int KeptAlive => _keepAlive?.Count ?? 0;

    /// <summary>Gets the invoker over the caller's handler.</summary>
    internal HttpMessageInvoker Http { get; }

    /// <summary>Gets the HTTP version requests ask for.</summary>
    internal Version HttpVersion { get; }

    /// <inheritdoc/>
    /// <exception cref="HttpRequestException">The negotiate request failed.</exception>
    /// <exception cref="HubException">The server refused the negotiation or the handshake; the message is the server's.</exception>
    /// <exception cref="IOException">The transport failed to open.</exception>
    public async Task<IPubSubClient> ConnectAsync(NotificationHandler onNotification, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(onNotification);
        var (connectionId, connectionToken) = await NegotiateAsync(cancellationToken).ConfigureAwait(false);
        var connectionUri = new Uri($"{HubUri}?id={Uri.EscapeDataString(connectionToken)}");
        SignalRClient client = Kind == SignalRTransportKind.LongPolling
            ? new LongPollingSignalRClient(this, connectionId, connectionUri, onNotification)
            : new WebSocketSignalRClient(this, connectionId, connectionUri, onNotification, _keepAlive);
        try
        {
            await client.StartAsync(cancellationToken).ConfigureAwait(false);
            return client;
        }
        catch
        {
            await client.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Stops the shared keep-alive. Clients still connected stay usable but are no longer pinged.</summary>
    /// <returns>A completed task.</returns>
    public ValueTask DisposeAsync()
    {
        // The invoker stays undisposed: it only wraps the caller's handler, and clients may outlive the transport.
        _keepAlive?.Dispose();
        return ValueTask.CompletedTask;
    }

    /// <summary>Creates a request with the transport's HTTP version.</summary>
    /// <param name="method">The method.</param>
    /// <param name="uri">The address.</param>
    /// <returns>The request.</returns>
    internal HttpRequestMessage CreateRequest(HttpMethod method, Uri uri) =>
        new(method, uri) { Version = HttpVersion, VersionPolicy = HttpVersionPolicy.RequestVersionOrLower };

    private async Task<(string ConnectionId, string ConnectionToken)> NegotiateAsync(CancellationToken cancellationToken)
    {
        var uri = new Uri($"{HubUri}/negotiate?negotiateVersion=1");
        using var request = CreateRequest(HttpMethod.Post, uri);
        using var response = await Http.SendAsync(request, cancellationToken).ConfigureAwait(false);
        if (response.StatusCode != HttpStatusCode.OK)
        {
            throw new HttpRequestException(
                $"Negotiating with {uri} failed: HTTP {(int)response.StatusCode} {response.ReasonPhrase}.", inner: null, response.StatusCode);
        }

        var body = await response.Content.ReadAsByteArrayAsync(cancellationToken).ConfigureAwait(false);
        using var negotiation = JsonDocument.Parse(body);
        var root = negotiation.RootElement;
        if (root.TryGetProperty("error", out var error))
        {
            throw new HubException($"The server at {uri} refused to negotiate: {error.GetString()}");
        }

        var transport = Kind.ToString();
        var offered = root.TryGetProperty("availableTransports", out var transports)
            && transports.EnumerateArray().Any(t => t.TryGetProperty("transport", out var name) && name.ValueEquals(transport));
        if (!offered)
        {
            throw new HubException($"The hub at {HubUri} does not offer the {transport} transport.");
        }

        // negotiateVersion 1: the token addresses the connection and stays private; the id is public, for messages.
        if (!root.TryGetProperty("connectionToken", out var token) || !root.TryGetProperty("connectionId", out var id))
        {
            throw new HubException($"The negotiate response of {uri} has no connection token; is it a SignalR hub of ASP.NET Core 3.0 or later?");
        }

        return (id.GetString()!, token.GetString()!);
    }
}
