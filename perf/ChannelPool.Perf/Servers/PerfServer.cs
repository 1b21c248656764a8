using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Net;
using ChannelPool.Perf.Peers;
using ChannelPool.Perf.Scenarios.Broadcast;
using ChannelPool.PollingDuplex;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;
using ChannelPool.Testing.ServiceModel.Soap;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace ChannelPool.Perf.Servers;

/// <summary>Settings every perf server shares, whichever process it runs in.</summary>
internal sealed record PerfServerSettings
{
    /// <summary>Gets how long a long poll is held before an empty answer, for our endpoints and SignalR's alike.</summary>
    public TimeSpan PollTimeout { get; init; } = TimeSpan.FromSeconds(15);

    /// <summary>Gets the flood endpoint's MaxPendingMessagesPerSession: how many frames one multiple-mode response may carry.</summary>
    public int FloodWindow { get; init; } = 256;

    /// <summary>Gets whether to start the WCF test services (net.tcp with TLS, SoapCore over HTTPS) for the proxies scenario.</summary>
    public bool Wcf { get; init; } = true;
}

/// <summary>
/// The embedded servers, on 127.0.0.1: Kestrel (HTTP/1.1, and HTTP/2 on a second port) with the polling duplex pub/sub
/// service at <c>/pubsub</c>, the flood at <c>/flood</c>, the WebSocket flood at <c>/ws/flood</c>, and the peers'
/// endpoints when the peers console runs it (SignalR at <c>/signalr</c>, the floor at <c>/floor</c>); and the WCF
/// test services the proxies scenario calls: the [MC-NMF] net.tcp TLS host and SoapCore over HTTPS, each started twice,
/// serving a session's calls at once and one at a time (WCF's defaults), with one <see cref="ServerCounters"/> a kind.
/// </summary>
internal sealed class PerfServer : IPerfServer
{
    /// <summary>
    /// Gets how many streams one HTTP/2 connection carries at once: Kestrel's default, set here so that ours and
    /// SignalR's clients, which share the listener, multiplex alike, and the console can count its sockets.
    /// </summary>
    public const int Http2StreamsPerConnection = 100;

    private readonly WebApplication _app;
    private readonly IReadOnlyList<NetTcpTestHost> _netTcp;
    private readonly IReadOnlyList<SoapTestHost> _soap;
    private readonly ServerCounters? _netTcpCounters;
    private readonly ServerCounters? _soapCounters;
    private readonly MeterListener _listener;
    private readonly ConcurrentDictionary<string, long> _duplex = new(StringComparer.Ordinal);

    private PerfServer(WebApplication app, IReadOnlyList<NetTcpTestHost> netTcp, IReadOnlyList<SoapTestHost> soap, PerfEndpoints endpoints)
    {
        _app = app;
        _netTcp = netTcp;
        _soap = soap;
        _netTcpCounters = netTcp.Count > 0 ? netTcp[0].Counters : null;
        _soapCounters = soap.Count > 0 ? soap[0].Counters : null;
        Endpoints = endpoints;
        _listener = new MeterListener
        {
            InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == "ChannelPool.PollingDuplex" && instrument is Counter<long>)
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            },
        };
        _listener.SetMeasurementEventCallback<long>((instrument, value, _, _) => _duplex.AddOrUpdate(instrument.Name, value, (_, total) => total + value));
        _listener.Start();
    }

    public PerfEndpoints Endpoints { get; }

    public string Kind => "in-process";

    public static async Task<PerfServer> StartAsync(PerfServerSettings settings, PerfPeers peers, CancellationToken cancellationToken)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.Logging.AddSimpleConsole().SetMinimumLevel(LogLevel.Warning);
        builder.WebHost.UseKestrel(kestrel =>
        {
            kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = HttpProtocols.Http1);

            // The same endpoints over HTTP/2 without TLS (h2c, prior knowledge): loopback only, for the floor scenario and
            // the broadcast's --http 2.
            kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = HttpProtocols.Http2);

            // Thousands of simulated clients each hold a connection: no limit but the machine's.
            kestrel.Limits.MaxConcurrentConnections = null;
            kestrel.Limits.MaxConcurrentUpgradedConnections = null;
            kestrel.Limits.Http2.MaxStreamsPerConnection = Http2StreamsPerConnection;
        });
        builder.Services.AddSingleton<FloodHandler>();
        peers.AddServices?.Invoke(builder, settings);
        var app = builder.Build();
        app.UseWebSockets();

        // As in the original's measurements: sessions arrive all at once, live for the whole run, and the server takes
        // them all. The per-session message limit stays at its default (64 messages queued with no poll outstanding).
        // Every simulated client may use every topic: no topic rule, chosen explicitly. The per-user and per-session bounds
        // keep their defaults. The broadcast and collaboration scenarios measure a rule's cost, and broadcast the bounds',
        // against this on twin endpoints (TwinEndpoint). No rate limiter is mapped, so nothing throttles the clients' polls.
        void PubSub(PollingDuplexOptions o)
        {
            o.ServerPollTimeout = settings.PollTimeout;
            o.InactivityTimeout = TimeSpan.FromHours(2);
            o.MaxPendingSessions = 1_000_000;
            o.MaxConcurrentSessions = 1_000_000;

            // Every simulated client is anonymous on 127.0.0.1.
            o.MaxSessionsPerAddress = 1_000_000;
        }

        app.MapPollingDuplexPubSub("/pubsub", o =>
        {
            PubSub(o);
            o.Topics.AllowAnonymous = true;
        });
        TwinEndpoint.MapTwinEndpoints(app, PubSub);
        app.MapPollingDuplex<FloodHandler>("/flood", o =>
        {
            o.ServerPollTimeout = settings.PollTimeout;
            o.MaxPendingMessagesPerSession = settings.FloodWindow;
        });
        app.MapWebSocketFlood("/ws/flood");
        peers.MapEndpoints?.Invoke(app, settings);
        await app.StartAsync(cancellationToken);
        var addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Select(a => new Uri(a.TrimEnd('/') + "/")).ToList();

        var netTcp = new List<NetTcpTestHost>();
        var soap = new List<SoapTestHost>();
        WcfEndpoints? wcf = null;
        if (settings.Wcf)
        {
            // Not disposed: the hosts present it for as long as they run. The two hosts of a kind share their counters:
            // cells run one at a time, so a cell's counts are its own host's.
            var certificate = TestCertificate.Create();
            ServerCounters netTcpCounters = new(), soapCounters = new();
            foreach (var concurrency in (ServiceConcurrency[])[ServiceConcurrency.Multiple, ServiceConcurrency.Single])
            {
                netTcp.Add(await NetTcpTestHost.StartAsync(certificate, counters: netTcpCounters, concurrency: concurrency, cancellationToken: cancellationToken));
                soap.Add(await SoapTestHost.StartAsync(
                    certificate, counters: soapCounters, secureConversation: new() { Concurrency = concurrency }, cancellationToken: cancellationToken));
            }

            wcf = new WcfEndpoints(netTcp[0].Port, soap[0].Port, netTcp[1].Port, soap[1].Port, certificate.RawData);
        }

        return new PerfServer(app, netTcp, soap, new PerfEndpoints(addresses[0], wcf) { Http2 = addresses[1] });
    }

    public Task<ServerStats> GetStatsAsync(CancellationToken cancellationToken) => Task.FromResult(ReadStats());

    /// <summary>In-process, the console's own collection before a round covers the server too.</summary>
    public Task SettleAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>A full, blocking collection with finalizers run, as a benchmark harness does between iterations.</summary>
    public static void Settle()
    {
        GC.Collect(GC.MaxGeneration, GCCollectionMode.Forced, blocking: true, compacting: true);
        GC.WaitForPendingFinalizers();
        GC.Collect(GC.MaxGeneration, GCCollectionMode.Forced, blocking: true, compacting: true);
    }

    public ServerStats ReadStats()
    {
        // getrusage, to the microsecond; Process.TotalProcessorTime reads /proc in 10 ms ticks, too coarse for a short round.
        return new ServerStats(
            true,
            Environment.CpuUsage.TotalTime.TotalSeconds,
            GC.GetTotalAllocatedBytes(precise: false),
            new Dictionary<string, long>(_duplex),
            _netTcpCounters?.Snapshot() ?? default,
            _soapCounters?.Snapshot() ?? default);
    }

    public async ValueTask DisposeAsync()
    {
        _listener.Dispose();
        using (var stop = new CancellationTokenSource(TimeSpan.FromSeconds(10)))
        {
            await _app.StopAsync(stop.Token);
        }

        await _app.DisposeAsync();
        foreach (var host in _netTcp)
        {
            await host.StopAsync();
        }

        foreach (var host in _soap)
        {
            await host.StopAsync();
        }
    }
}
