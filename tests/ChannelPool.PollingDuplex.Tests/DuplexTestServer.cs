using System.Collections.Concurrent;
using System.Net;
using System.Security.Cryptography.X509Certificates;
using ChannelPool.PollingDuplex.PubSub;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>
/// A real Kestrel server on 127.0.0.1 with a certificate generated for the test run, serving HTTP/1.1 and HTTP/2. It maps
/// a recording endpoint at <c>/duplex</c> and the pub/sub service at <c>/pubsub</c>. Clients trust exactly its
/// certificate.
/// </summary>
internal sealed class DuplexTestServer : IAsyncDisposable
{
    private static readonly Lazy<X509Certificate2> Certificate = new(TestCertificate.CreateEcdsa);
    private readonly WebApplication _app;

    private DuplexTestServer(WebApplication app, Uri address)
    {
        _app = app;
        Address = address;
    }

    public Uri Address { get; }

    public Uri Duplex => new(Address, "duplex");

    public Uri PubSub => new(Address, "pubsub");

    public RecordingHandler Recorder => _app.Services.GetRequiredService<RecordingHandler>();

    public PubSubHandler PubSubService => _app.Services.GetRequiredService<PubSubHandler>();

    public static async Task<DuplexTestServer> StartAsync(Action<PollingDuplexOptions>? configure = null, bool https = true, Action<IServiceCollection>? services = null)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.UseKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen =>
        {
            listen.Protocols = https ? HttpProtocols.Http1AndHttp2 : HttpProtocols.Http1;
            if (https)
            {
                listen.UseHttps(Certificate.Value);
            }
        }));
        builder.Services.AddSingleton<RecordingHandler>();
        builder.Services.AddSingleton<PubSubHandler>();
        services?.Invoke(builder.Services);
        var app = builder.Build();
        // Every test client is anonymous on loopback, so shares one address: its cap is lifted here (Security/ tests set it).
        app.MapPollingDuplex<RecordingHandler>("/duplex", o =>
        {
            o.MaxSessionsPerAddress = 1_000_000;
            configure?.Invoke(o);
        });
        app.MapPollingDuplexPubSub("/pubsub", o =>
        {
            // Anyone may use any topic here: the explicit choice every pub/sub endpoint makes (Security/ tests give rules).
            o.Topics.AllowAnonymous = true;
            o.MaxSessionsPerAddress = 1_000_000;
            configure?.Invoke(o);
        });
        await app.StartAsync();
        var address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
        return new DuplexTestServer(app, new Uri(address.TrimEnd('/') + "/"));
    }

    /// <summary>An HTTP client that trusts only this server's certificate, optionally through a fault-injecting handler.</summary>
    public static HttpClient CreateHttpClient(Version? version = null, Func<HttpMessageHandler, HttpMessageHandler>? wrap = null)
    {
        var sockets = new SocketsHttpHandler
        {
            PooledConnectionLifetime = TimeSpan.FromMinutes(5),
            MaxConnectionsPerServer = int.MaxValue,
            SslOptions = { RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetRawCertData().AsSpan().SequenceEqual(Certificate.Value.RawData) },
        };
        HttpMessageHandler handler = sockets;
        if (wrap is not null)
        {
            handler = wrap(handler);
        }

        return new HttpClient(handler)
        {
            DefaultRequestVersion = version ?? HttpVersion.Version11,
            DefaultVersionPolicy = HttpVersionPolicy.RequestVersionExact,
            Timeout = Timeout.InfiniteTimeSpan,
        };
    }

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}

/// <summary>The test application's handler: remembers sessions and what each sent, and can echo.</summary>
internal sealed class RecordingHandler : PollingDuplexHandler
{
    public ConcurrentDictionary<string, DuplexSession> Sessions { get; } = new();

    public ConcurrentDictionary<string, ConcurrentQueue<DuplexMessage>> Received { get; } = new();

    public ConcurrentDictionary<string, DuplexSessionEndReason> Ended { get; } = new();

    /// <summary>Gets or sets whether every message is sent straight back on its session.</summary>
    public bool Echo { get; set; }

    public override ValueTask OnSessionOpenedAsync(DuplexSession session, CancellationToken cancellationToken)
    {
        Sessions[session.Id] = session;
        Received[session.Id] = new ConcurrentQueue<DuplexMessage>();
        return ValueTask.CompletedTask;
    }

    public override ValueTask OnMessageAsync(DuplexSession session, DuplexMessage message, CancellationToken cancellationToken)
    {
        if (message.IsJson && message.ToString() == "\"reject me\"")
        {
            throw new DuplexMessageRejectedException("this message asked to be rejected");
        }

        Received[session.Id].Enqueue(message);
        if (Echo)
        {
            session.Send(message);
        }

        return ValueTask.CompletedTask;
    }

    public override ValueTask OnSessionEndedAsync(DuplexSession session, DuplexSessionEndReason reason)
    {
        Ended[session.Id] = reason;
        return ValueTask.CompletedTask;
    }
}
