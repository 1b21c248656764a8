using System.Runtime.InteropServices;
using System.Text.Json;
using ChannelPool.Perf.Clients;
using Microsoft.AspNetCore.Http.Connections;
using Microsoft.AspNetCore.SignalR.Client;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>
/// Simulated clients of <see cref="SignalRPubSubHub"/> built with the official .NET client
/// (Microsoft.AspNetCore.SignalR.Client): what a user would pick instead of our polling duplex. Each client is one
/// <see cref="HubConnection"/> with the JSON hub protocol over long polling or WebSockets, SignalR's defaults otherwise.
/// </summary>
internal sealed class SignalRTransport : IPubSubTransport
{
    private readonly HttpMessageInvoker _http;

    /// <summary>Initializes the transport.</summary>
    /// <param name="hubUri">The hub's address, for example <c>http://127.0.0.1:5000/signalr</c>.</param>
    /// <param name="kind">Long polling or WebSockets.</param>
    /// <param name="handler">The handler every HTTP request goes through; shared by all clients, never disposed here.</param>
    /// <param name="httpVersion">
    /// The HTTP version to ask for (HTTP/1.1 unless given). HTTP/1.1 may be answered with a lower one; HTTP/2 is asked for
    /// exactly, so on an <c>http://</c> address it is h2c with prior knowledge.
    /// </param>
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
        _http = new HttpMessageInvoker(handler, disposeHandler: false);
        HttpVersion = httpVersion ?? System.Net.HttpVersion.Version11;
    }

    /// <inheritdoc/>
    public string Name => (Kind == SignalRTransportKind.LongPolling ? "signalr-longpolling" : "signalr-websockets") + (Protocol == ClientProtocol.Http2 ? " (HTTP/2)" : string.Empty);

    /// <summary>Gets the hub's address, without a trailing slash.</summary>
    public Uri HubUri { get; }

    /// <summary>Gets the transport the clients use.</summary>
    public SignalRTransportKind Kind { get; }

    /// <summary>
    /// Gets the longest a client stays silent before it pings the server (<see cref="HubConnection.KeepAliveInterval"/>):
    /// 15 s unless set, SignalR's default. The client sends no pings over long polling, whose polls keep it alive.
    /// </summary>
    public TimeSpan PingInterval { get; init; } = TimeSpan.FromSeconds(15);

    /// <summary>Gets the HTTP version requests ask for.</summary>
    internal Version HttpVersion { get; }

    /// <inheritdoc/>
    public ClientProtocol Protocol => HttpVersion.Major >= 2 ? ClientProtocol.Http2 : ClientProtocol.Http11;

    /// <inheritdoc/>
    public async Task<IPubSubClient> ConnectAsync(NotificationHandler onNotification, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(onNotification);
        var connection = new HubConnectionBuilder()
            .WithUrl(HubUri, Kind == SignalRTransportKind.LongPolling ? HttpTransportType.LongPolling : HttpTransportType.WebSockets, options =>
            {
                // Every client's requests share the caller's handler (and its connection pool), as the raw clients did.
                options.HttpMessageHandlerFactory = _ => new SharedHandler(this);
            })
            .Build();
        connection.KeepAliveInterval = PingInterval;

        // The JSON protocol hands the data over as a JsonElement; its raw UTF-8 is the published value, not a copy.
        connection.On<string, JsonElement>(SignalRPubSubHub.NotifyMethod, (_, data) => onNotification(JsonMarshal.GetRawUtf8Value(data)));
        try
        {
            await connection.StartAsync(cancellationToken).ConfigureAwait(false);
            return new SignalRClient(connection);
        }
        catch
        {
            await connection.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Nothing to stop: each client owns its connection, and the handler belongs to the caller.</summary>
    /// <returns>A completed task.</returns>
    public ValueTask DisposeAsync() => ValueTask.CompletedTask;

    /// <summary>One client's handler: forwards to the shared one, which a client's disposal must leave alone.</summary>
    private sealed class SharedHandler(SignalRTransport transport) : HttpMessageHandler
    {
        protected override Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            // HttpConnectionOptions has no version of its own; this handler is the client's one hook for it. On a
            // cleartext address only an exact HTTP/2 request speaks h2c (prior knowledge); "or lower" would fall to HTTP/1.1.
            request.Version = transport.HttpVersion;
            request.VersionPolicy = transport.HttpVersion.Major >= 2 ? HttpVersionPolicy.RequestVersionExact : HttpVersionPolicy.RequestVersionOrLower;
            return transport._http.SendAsync(request, cancellationToken);
        }
    }
}
