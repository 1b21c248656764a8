using System.Security.Cryptography.X509Certificates;
using ChannelPool.Testing.ServiceModel;

namespace ChannelPool.Perf.Servers;

/// <summary>Where a perf server listens: one HTTP base address for the duplex and WebSocket endpoints (and the peers'), and the WCF test services.</summary>
/// <param name="Http">The HTTP base address, ending in <c>/</c>.</param>
/// <param name="Wcf">The WCF test services, or <see langword="null"/> when there are none.</param>
internal sealed record PerfEndpoints(Uri Http, WcfEndpoints? Wcf)
{
    public Uri PubSub => new(Http, "pubsub");

    public Uri Flood => new(Http, "flood");

    /// <summary>Gets the same endpoints' HTTP/2 base address (cleartext, prior knowledge), or <see langword="null"/> where there is none.</summary>
    public Uri? Http2 { get; init; }

    public Uri WebSocketFlood => new(Http.Scheme == "https" ? "wss" + Http.AbsoluteUri[5..] + "ws/flood" : "ws" + Http.AbsoluteUri[4..] + "ws/flood");
}

/// <summary>
/// The WCF test services on 127.0.0.1: the [MC-NMF] net.tcp TLS host and SoapCore over HTTPS, each twice, once serving a
/// session's calls at once (<see cref="ServiceConcurrency.Multiple"/>) and once one at a time, as WCF's defaults do
/// (<see cref="ServiceConcurrency.Single"/>). Sessionless endpoints serve at once on either.
/// </summary>
/// <param name="NetTcpPort">The net.tcp host's port, <see cref="ServiceConcurrency.Multiple"/>.</param>
/// <param name="SoapPort">The HTTPS port of SoapCore (<c>/basic</c>, <c>/ws</c>, <c>/username</c>, <c>/sct</c>), <see cref="ServiceConcurrency.Multiple"/>.</param>
/// <param name="SingleNetTcpPort">The net.tcp host's port, <see cref="ServiceConcurrency.Single"/>.</param>
/// <param name="SingleSoapPort">SoapCore's HTTPS port, <see cref="ServiceConcurrency.Single"/> on <c>/sct</c>.</param>
/// <param name="Certificate">The DER bytes of the services' certificate, which clients pin.</param>
internal sealed record WcfEndpoints(int NetTcpPort, int SoapPort, int SingleNetTcpPort, int SingleSoapPort, byte[] Certificate)
{
    public X509Certificate2 LoadCertificate() => X509CertificateLoader.LoadCertificate(Certificate);

    /// <summary>The net.tcp and HTTPS ports of the hosts that serve sessions as <paramref name="concurrency"/> says.</summary>
    public (int NetTcp, int Soap) Ports(ServiceConcurrency concurrency) =>
        concurrency == ServiceConcurrency.Single ? (SingleNetTcpPort, SingleSoapPort) : (NetTcpPort, SoapPort);
}

/// <summary>What a server process has done so far; the console reports deltas between two of these.</summary>
/// <param name="IsKnown">Whether the counters were read (the redis command's nodes have none).</param>
/// <param name="CpuSeconds">Processor time the server process used.</param>
/// <param name="AllocatedBytes">Bytes the server process allocated.</param>
/// <param name="Duplex">The polling duplex endpoints' counters, by instrument name (for example <c>pollingduplex.messages.redelivered</c>).</param>
/// <param name="NetTcp">The net.tcp test hosts' counters (both concurrencies together): connections, TLS handshakes, sessions, calls.</param>
/// <param name="Soap">The SoapCore hosts' counters (every HTTPS path and both concurrencies together).</param>
internal sealed record ServerStats(
    bool IsKnown, double CpuSeconds, long AllocatedBytes, IReadOnlyDictionary<string, long> Duplex, ServerCountsSnapshot NetTcp = default, ServerCountsSnapshot Soap = default)
{
    public static ServerStats Unknown { get; } = new(false, double.NaN, -1, new Dictionary<string, long>());

    public long DuplexCounter(string name) => Duplex.TryGetValue(name, out var value) ? value : 0;
}

/// <summary>Sums of the test services' counts, over turns or rounds (the snapshot itself only subtracts).</summary>
internal static class ServerCountsSums
{
    public static ServerCountsSnapshot Plus(this ServerCountsSnapshot a, ServerCountsSnapshot b) => new(
        a.Connections + b.Connections, a.TlsHandshakes + b.TlsHandshakes, a.SessionsStarted + b.SessionsStarted, a.SessionsEnded + b.SessionsEnded, a.Calls + b.Calls,
        a.EndRecords + b.EndRecords, a.Negotiations + b.Negotiations);
}

/// <summary>A running perf server: in this process, or in a child process.</summary>
internal interface IPerfServer : IAsyncDisposable
{
    /// <summary>Gets where it listens.</summary>
    PerfEndpoints Endpoints { get; }

    /// <summary>Gets how it runs, for the report: <c>child process</c> or <c>in-process</c>.</summary>
    string Kind { get; }

    /// <summary>Reads the server's counters.</summary>
    Task<ServerStats> GetStatsAsync(CancellationToken cancellationToken);

    /// <summary>
    /// Collects the server's garbage, so that the set-up before a timed round (a pool's 50 handshakes, say) leaves no
    /// collection to land inside it; the console does the same on its side.
    /// </summary>
    Task SettleAsync(CancellationToken cancellationToken);
}
