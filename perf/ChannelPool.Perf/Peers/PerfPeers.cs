using System.Reflection;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Scenarios;
using ChannelPool.Perf.Servers;
using Microsoft.AspNetCore.Builder;

namespace ChannelPool.Perf.Peers;

/// <summary>
/// What the peers console (<c>perf/ChannelPool.Perf.Peers</c>) adds to this one: the pub/sub transports ChannelPool is
/// compared with, their endpoints on the perf server, and scenarios of its own. This console runs with <see cref="None"/>
/// and measures ChannelPool alone.
/// </summary>
internal sealed class PerfPeers
{
    public static PerfPeers None { get; } = new();

    /// <summary>Gets the peer transports <c>--transport</c> takes beside <c>polling-duplex</c>, in the order they run.</summary>
    public IReadOnlyList<PeerTransport> Transports { get; init; } = [];

    /// <summary>Gets the peers' scenarios; the suite runs them before broadcast.</summary>
    public IReadOnlyList<IPerfScenario> Scenarios { get; init; } = [];

    /// <summary>Gets what the perf server adds for the peers: their services, then their endpoints.</summary>
    public Action<WebApplicationBuilder, PerfServerSettings>? AddServices { get; init; }

    /// <summary>Gets the peers' endpoints, mapped on the perf server beside ours.</summary>
    public Action<WebApplication, PerfServerSettings>? MapEndpoints { get; init; }

    /// <summary>Gets the program the server child process runs (<c>serve</c>), so that it serves the peers' endpoints too.</summary>
    public Assembly Program { get; init; } = typeof(PerfPeers).Assembly;

    /// <summary>Gets whether any peer is registered: the <c>peer</c> command and the peers in the suite come only then.</summary>
    public bool Any => Transports.Count > 0;
}

/// <summary>A peer transport <c>--transport</c> can name.</summary>
/// <param name="Name">Its <c>--transport</c> name.</param>
/// <param name="InAll">Whether <c>--transport all</c> and the suite run it (the floor's bare long poll is named only).</param>
/// <param name="Create">Makes its transports against the run's servers, one per HTTP version asked for where it runs on several.</param>
internal sealed record PeerTransport(string Name, bool InAll, Func<PerfContext, IReadOnlyList<ClientProtocol>, IEnumerable<IPubSubTransport>> Create);
