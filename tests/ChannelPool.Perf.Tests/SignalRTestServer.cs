using System.Net;
using ChannelPool.Perf.Peers.SignalR;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.SignalR;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace ChannelPool.Perf.Tests;

/// <summary>
/// A real Kestrel server on 127.0.0.1 serving <see cref="SignalRPubSubHub"/> at <c>/signalr</c> with a 5 s poll timeout,
/// and one shared handler for all the test's clients, as the console has.
/// </summary>
internal sealed class SignalRTestServer : IAsyncDisposable
{
    public static readonly TimeSpan PollTimeout = TimeSpan.FromSeconds(5);

    private readonly WebApplication _app;

    private SignalRTestServer(WebApplication app, Uri hubUri)
    {
        _app = app;
        HubUri = hubUri;
    }

    public Uri HubUri { get; }

    public SocketsHttpHandler Handler { get; } = new() { MaxConnectionsPerServer = int.MaxValue, PooledConnectionLifetime = TimeSpan.FromMinutes(5) };

    /// <summary>Starts the server.</summary>
    /// <param name="configure">Changes to the hub's options.</param>
    /// <param name="protocols">What the listener speaks; <see cref="HttpProtocols.Http2"/> alone refuses any HTTP/1.1 request.</param>
    /// <returns>The running server.</returns>
    public static async Task<SignalRTestServer> StartAsync(Action<HubOptions>? configure = null, HttpProtocols protocols = HttpProtocols.Http1)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.UseKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = protocols));
        builder.Services.AddSignalRPubSub();
        if (configure is not null)
        {
            builder.Services.Configure(configure);
        }

        var app = builder.Build();
        app.MapSignalRPubSub("/signalr", PollTimeout);
        await app.StartAsync();
        var address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
        return new SignalRTestServer(app, new Uri(address.TrimEnd('/') + "/signalr"));
    }

    public SignalRTransport CreateTransport(SignalRTransportKind kind, TimeSpan? pingInterval = null, Version? httpVersion = null) =>
        new(HubUri, kind, Handler, httpVersion) { PingInterval = pingInterval ?? TimeSpan.FromSeconds(15) };

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
        Handler.Dispose();
    }
}
