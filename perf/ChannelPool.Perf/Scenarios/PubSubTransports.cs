using System.CommandLine;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Peers;
using ChannelPool.Perf.Scenarios.Broadcast;
using ChannelPool.PollingDuplex;

namespace ChannelPool.Perf.Scenarios;

/// <summary>Which pub/sub transports a scenario runs (ours and the SignalR peers), and how our own clients poll.</summary>
/// <param name="Names">Transport names, in the order they run.</param>
/// <param name="Mode">Our clients' poll mode.</param>
/// <param name="Encoding">Our clients' encoding.</param>
internal sealed record PubSubTransportChoice(IReadOnlyList<string> Names, PollingDuplexMode Mode, DuplexEncoding Encoding)
{
    /// <summary>
    /// Gets the HTTP versions ours and SignalR long polling run on, each transport once per version (HTTP/1.1 unless
    /// set). SignalR WebSockets runs once, on HTTP/1.1, whatever this says: its clients hold a connection each either way.
    /// </summary>
    public IReadOnlyList<ClientProtocol> Protocols { get; init; } = [ClientProtocol.Http11];

    /// <summary>Gets the twins of <c>/pubsub</c> our clients also run against, each right after ours on the same HTTP version.</summary>
    public IReadOnlyList<TwinEndpoint> Twins { get; init; } = [];

    public const string PollingDuplex = "polling-duplex";
    public const string SignalRLongPolling = "signalr-longpolling";
    public const string SignalRWebSockets = "signalr-websockets";

    /// <summary>The bare Kestrel long poll of the peers console's floor scenario: what a delivery costs with nothing of ours in it. Broadcast only.</summary>
    public const string Floor = "floor";

    /// <summary>Gets ours alone, in the mode and encoding the targets are about (multiple, binary).</summary>
    public static PubSubTransportChoice Ours { get; } = new([PollingDuplex], PollingDuplexMode.MultipleMessagesPerPoll, DuplexEncoding.Binary);

    /// <summary>Creates the transports against the run's servers (ours with their twins), runs <paramref name="body"/> with them, and disposes them.</summary>
    /// <typeparam name="T">What the body measures.</typeparam>
    /// <returns>What <paramref name="body"/> returned.</returns>
    public async Task<T> UseAsync<T>(PerfContext context, Func<IReadOnlyList<IPubSubTransport>, Task<T>> body)
    {
        var protocols = Protocols.Distinct().ToList();
        IPubSubTransport Ours(ClientProtocol protocol, string path) => new DuplexPubSubTransport(context.HttpFor(protocol), new Uri(context.BaseAddress(protocol), path), Encoding, Mode);
        IEnumerable<IPubSubTransport> OursAndTwins(ClientProtocol protocol)
        {
            var ours = Ours(protocol, "pubsub");
            return [ours, .. Twins.Select(twin => new RenamedTransport(Ours(protocol, twin.Path), twin.NameFor(ours.Name)))];
        }

        IReadOnlyList<IPubSubTransport> transports = [.. Names.Distinct().SelectMany(name => name switch
        {
            PollingDuplex => protocols.SelectMany(OursAndTwins),
            _ => context.Peers.Transports.FirstOrDefault(t => t.Name == name)?.Create(context, protocols)
                ?? throw new ArgumentException($"Unknown transport '{name}': this console runs {PollingDuplex} alone; the peers run in perf/ChannelPool.Perf.Peers."),
        })];
        try
        {
            return await body(transports);
        }
        finally
        {
            foreach (var transport in transports)
            {
                await transport.DisposeAsync();
            }
        }
    }
}

/// <summary>
/// The <c>--transport</c> option. The peer command's two scenarios share one instance, so the option appears once and
/// both scenarios read the same choice.
/// </summary>
internal sealed class PubSubTransportOptions
{
    private readonly Option<string[]> _transport;

    /// <param name="peers">The peer transports besides ours.</param>
    /// <param name="allByDefault">Whether the command runs every transport unless told (the peer command) or ours alone.</param>
    public PubSubTransportOptions(PerfPeers peers, bool allByDefault = false)
    {
        AllNames = [PubSubTransportChoice.PollingDuplex, .. peers.Transports.Where(t => t.InAll).Select(t => t.Name)];
        KnownNames = [PubSubTransportChoice.PollingDuplex, .. peers.Transports.Select(t => t.Name)];
        IReadOnlyList<string> defaults = allByDefault ? AllNames : [PubSubTransportChoice.PollingDuplex];
        var peersElsewhere = peers.Any ? string.Empty : " (SignalR and the floor's bare long poll run in the peers console, perf/ChannelPool.Perf.Peers)";
        _transport = new("--transport")
        {
            Description = $"Transports to run: {string.Join(", ", KnownNames)}, or all{peersElsewhere}. Default: {string.Join(' ', defaults)}.",
            DefaultValueFactory = _ => [.. defaults],
            AllowMultipleArgumentsPerToken = true,
        };
        _transport.Validators.Add(r =>
        {
            foreach (var name in r.GetValueOrDefault<string[]>() ?? [])
            {
                if (name != "all" && !KnownNames.Contains(name))
                {
                    r.AddError($"Unknown --transport '{name}'; use {string.Join(", ", KnownNames)} or all{peersElsewhere}.");
                }
            }
        });
    }

    /// <summary>Gets what <c>--transport all</c> runs: ours and every peer but the floor.</summary>
    public IReadOnlyList<string> AllNames { get; }

    /// <summary>Gets every name <c>--transport</c> takes.</summary>
    public IReadOnlyList<string> KnownNames { get; }

    /// <summary>Gets ours beside every peer, as the suite runs them (ours alone in this console).</summary>
    public PubSubTransportChoice All => PubSubTransportChoice.Ours with { Names = AllNames };

    /// <summary>Adds the option to <paramref name="command"/>, unless another scenario of the same command already did.</summary>
    public void AddTo(Command command)
    {
        if (!command.Options.Contains(_transport))
        {
            command.Add(_transport);
        }
    }

    public PubSubTransportChoice Read(ParseResult parse) =>
        PubSubTransportChoice.Ours with { Names = parse.GetValue(_transport)!.Contains("all") ? AllNames : parse.GetValue(_transport)! };
}
