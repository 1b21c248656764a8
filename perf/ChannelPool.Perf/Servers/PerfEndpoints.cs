using System.Net;
using System.Security.Cryptography.X509Certificates;

namespace ChannelPool.Perf.Servers;

/// <summary>Where a perf server listens: one HTTP base address for the duplex, SignalR and WebSocket endpoints, and a TLS echo port.</summary>
/// <param name="Http">The HTTP base address, ending in <c>/</c>.</param>
/// <param name="Tls">The TLS echo server, or <see langword="null"/> when there is none.</param>
/// <param name="TlsCertificate">The DER bytes of the TLS server's certificate, which clients pin.</param>
internal sealed record PerfEndpoints(Uri Http, IPEndPoint? Tls, byte[]? TlsCertificate)
{
    public Uri PubSub => new(Http, "pubsub");

    public Uri Flood => new(Http, "flood");

    public Uri SignalR => new(Http, "signalr");

    public Uri WebSocketFlood => new(Http.Scheme == "https" ? "wss" + Http.AbsoluteUri[5..] + "ws/flood" : "ws" + Http.AbsoluteUri[4..] + "ws/flood");

    public X509Certificate2? LoadTlsCertificate() => TlsCertificate is null ? null : X509CertificateLoader.LoadCertificate(TlsCertificate);
}

/// <summary>What a server process has done so far; the console reports deltas between two of these.</summary>
/// <param name="TlsHandshakes">TLS handshakes the echo server completed.</param>
/// <param name="CpuSeconds">Processor time the server process used.</param>
/// <param name="AllocatedBytes">Bytes the server process allocated.</param>
/// <param name="Duplex">The polling duplex endpoints' counters, by instrument name (for example <c>pollingduplex.messages.redelivered</c>).</param>
internal sealed record ServerStats(long TlsHandshakes, double CpuSeconds, long AllocatedBytes, IReadOnlyDictionary<string, long> Duplex)
{
    public static ServerStats Unknown { get; } = new(-1, double.NaN, -1, new Dictionary<string, long>());

    public bool IsKnown => TlsHandshakes >= 0;

    public long DuplexCounter(string name) => Duplex.TryGetValue(name, out var value) ? value : 0;
}

/// <summary>A running perf server: in this process, in a child process, or remote.</summary>
internal interface IPerfServer : IAsyncDisposable
{
    /// <summary>Gets where it listens.</summary>
    PerfEndpoints Endpoints { get; }

    /// <summary>Gets how it runs, for the report: <c>child process</c>, <c>in-process</c> or <c>remote</c>.</summary>
    string Kind { get; }

    /// <summary>Reads the server's counters; <see cref="ServerStats.Unknown"/> for a remote server.</summary>
    Task<ServerStats> GetStatsAsync(CancellationToken cancellationToken);
}
