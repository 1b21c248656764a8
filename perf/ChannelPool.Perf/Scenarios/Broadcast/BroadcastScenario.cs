using System.CommandLine;
using System.Diagnostics;
using System.Globalization;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Servers;
using ChannelPool.Perf.Stats;
using Spectre.Console;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Broadcast;

/// <summary>
/// The <c>broadcast</c> command: the largest M clients on one topic for which every one of K bursts, one every P
/// seconds, arrives before the next. Target: 10,000 clients at P = 1 s, and 2× SignalR long polling.
/// </summary>
internal sealed class BroadcastScenario : PerfScenario<BroadcastSettings, IReadOnlyList<BroadcastResult>>
{
    private readonly PubSubTransportOptions _transports;
    private readonly Option<string[]> _http = new("--http")
    {
        Description = "HTTP versions ours and SignalR long polling run on, each a search of its own: 1.1 (a connection per client, so the open-file limit caps M), " +
            "2 (h2c with prior knowledge, up to 100 clients' polls on a connection), or both (--http 1.1 2). SignalR WebSockets always runs on HTTP/1.1. Default: 2.",
        DefaultValueFactory = _ => ["2"],
        AllowMultipleArgumentsPerToken = true,
    };

    /// <summary>Initializes a new instance of the <see cref="BroadcastScenario"/> class.</summary>
    /// <param name="transports">The transport options, shared with collaboration in the peer command.</param>
    public BroadcastScenario(PubSubTransportOptions transports)
    {
        _transports = transports;
        var periods = Options.Add(
            new Option<double[]>("--periods") { Description = "Burst periods P in seconds. Default: 1 2 5 10.", DefaultValueFactory = _ => [1, 2, 5, 10], AllowMultipleArgumentsPerToken = true },
            (s, v) => s with { Periods = [.. v.Select(TimeSpan.FromSeconds)] });
        Options.Add(PositiveInt("--bursts", "K: consecutive bursts that must each arrive before the next is due.", 100), (s, v) => s with { Bursts = v });
        Options.Add(PositiveInt("--scout-bursts", "Bursts per scouting probe, before K confirms.", 5), (s, v) => s with { ScoutBursts = v });
        var startClients = Options.Add(PositiveInt("--start-clients", "The first M tried.", 1000), (s, v) => s with { StartClients = v });
        var maxClients = Options.Add(
            PositiveInt("--max-clients", "The largest M tried (the open-file limit may cap it lower: over HTTP/1.1 every client is a socket in each process).", 100_000), (s, v) => s with { MaxClients = v });
        Options.Add(
            PositiveDouble("--resolution", "The search stops when the pass/fail gap is at most this fraction of M (0.02 resolves a 5% difference).", 0.1), (s, v) => s with { Resolution = v });
        Options.Add(_http);
        var sideBySide = Options.Add(
            new Option<int>("--side-by-side")
            {
                Description = "Instead of searching, run every transport at this M, each fleet connected throughout, in --rounds alternating K-burst probes: CPU per delivery at one scale, side by side.",
            },
            (s, v) => s with { SideBySide = v });
        Options.Add(PositiveInt("--rounds", "Alternating K-burst probes per transport, side by side or for --topic-rule compare.", 4, max: 50), (s, v) => s with { CompareRounds = v });
        periods.Validators.Add(r =>
        {
            foreach (var p in r.GetValueOrDefault<double[]>() ?? [])
            {
                if (!(p > 0) || p > 3600)
                {
                    r.AddError($"--periods must be seconds above 0 and at most 3600; got {p.ToString(CultureInfo.InvariantCulture)}.");
                }
            }
        });
        _http.Validators.Add(r =>
        {
            foreach (var value in r.GetValueOrDefault<string[]>() ?? [])
            {
                if (ClientProtocols.Parse(value) is null)
                {
                    r.AddError($"Unknown --http '{value}'; use {string.Join(" or ", ClientProtocols.OptionValues)}, or both (--http 1.1 2).");
                }
            }
        });
        sideBySide.Validators.Add(r =>
        {
            if (r.GetValueOrDefault<int>() is < 1 or > 100_000)
            {
                r.AddError($"--side-by-side must be from 1 to 100000 clients; got {r.GetValueOrDefault<int>()}.");
            }
        });
        startClients.Validators.Add(r =>
        {
            // An option the command line left out reads 0 from here, not its default: compare only with a given maximum.
            if (!r.Implicit && r.GetResult(maxClients) is { Implicit: false } max && r.GetValue(startClients) > max.GetValueOrDefault<int>())
            {
                r.AddError($"--start-clients ({r.GetValue(startClients)}) must not exceed --max-clients ({max.GetValueOrDefault<int>()}).");
            }
        });
    }

    public override string Name => "broadcast";

    public override string Description => "The original's broadcast script: the largest M clients on one topic for which every one of K bursts, one every P seconds, arrives before the next.";

    /// <summary>Gets the quick run's sizes: a few dozen clients, two bursts.</summary>
    private static BroadcastSettings Quick { get; } = new()
    {
        Periods = [TimeSpan.FromSeconds(0.5)], Bursts = 2, ScoutBursts = 2, StartClients = 20, MaxClients = 40, Resolution = 0.5, CompareRounds = 2,
    };

    public override void AddOptions(Command command)
    {
        _transports.AddTo(command);
        base.AddOptions(command);
        TwinEndpoint.AddTo(command, TwinEndpoint.TopicRule, TwinEndpoint.Unbounded);
    }

    /// <summary>
    /// The suite's broadcast: P = 1 s only, K = 10, ours beside both SignalR peers; ours and long polling on HTTP/2 (the
    /// 2× target: no open-file limit stops either search short of its CPU) and on HTTP/1.1 (where ours has met the limit's
    /// 17,716 clients, and which shows whether HTTP/2 helps at all). The searches start at 2,000 clients, which every
    /// transport passed in every suite, to pay for the two extra searches.
    /// </summary>
    public override BroadcastSettings SuiteSettings(bool quick) =>
        (quick ? Quick : new BroadcastSettings { Periods = [TimeSpan.FromSeconds(1)], Bursts = 10, ScoutBursts = 3, StartClients = 2_000 }) with
        {
            Transports = _transports.All with { Protocols = [ClientProtocol.Http2, ClientProtocol.Http11] },
        };

    public override BroadcastSettings ReadSettings(ParseResult parse, bool quick)
    {
        var settings = base.ReadSettings(parse, quick) with
        {
            Transports = _transports.Read(parse) with
            {
                Protocols = [.. parse.GetValue(_http)!.Select(v => ClientProtocols.Parse(v)!.Value).Distinct()],
                Twins = TwinEndpoint.Compared(parse, TwinEndpoint.TopicRule, TwinEndpoint.Unbounded),
            },
        };
        return settings with { Resolution = Math.Min(settings.Resolution, 0.5), StartClients = Math.Min(settings.StartClients, settings.MaxClients) };
    }

    protected override BroadcastSettings Basis(bool quick) => quick ? Quick : new();

    public override Task<IReadOnlyList<BroadcastResult>> RunAsync(PerfContext context, BroadcastSettings settings, CancellationToken cancellationToken) =>
        settings.Transports.UseAsync(context, list => new BroadcastRun(context, settings).RunAsync(list, cancellationToken));

    public override ReportSection Report(IReadOnlyList<BroadcastResult> results, BroadcastSettings settings, PerfContext context)
    {
        var section = NewSection("Broadcast: largest M clients on one topic, a burst every P seconds", results);
        section.Tables.Add(new ReportTable(
            "Largest M",
            ["Transport", "HTTP", "P (s)", "K", "Largest M", "Limit"],
            [.. results.Select(r => (IReadOnlyList<string>)[r.Transport, r.Protocol, Num(r.PeriodSeconds, "0.#"), Num(r.Bursts), Num(r.LargestClients), r.Limit ?? string.Empty])]));
        section.Tables.Add(new ReportTable(
            "Probes",
            ["Transport", "HTTP", "P (s)", "M", "Bursts", "Result", "Worst burst ms", "p50 ms", "p99 ms", "Client CPU µs/delivery", "Server CPU µs/delivery", "Failure"],
            [.. results.SelectMany(r => r.Probes.Select(p => (IReadOnlyList<string>)[
                r.Transport, r.Protocol, Num(r.PeriodSeconds, "0.#"), Num(p.Clients), Num(p.Bursts), p.Verdict,
                Num(p.WorstBurstMs, "0.0"), Num(p.Latency.P50Ms, "0.0"), Num(p.Latency.P99Ms, "0.0"),
                Num(p.ClientCpuMicrosPerDelivery, "0.0"), Num(p.ServerCpuMicrosPerDelivery, "0.0"), p.Failure ?? string.Empty]))]));
        if (settings.SideBySide is { } m)
        {
            section.Notes.Add($"Side by side at M = {m:N0}: {settings.CompareRounds} alternating K-burst rounds per transport, medians.");
            AddSideBySide(section, results);
            AddTwinTargets(section, results);
            return section;
        }

        foreach (var twin in TwinEndpoint.All.Where(t => results.Any(r => t.Bare(r.Transport) is not null && r.Alternating.Count > 0)))
        {
            section.Tables.Add(new ReportTable(
                $"{twin.Title}: alternating rounds at one M",
                ["Transport", "P (s)", "M", "Round", "Result", "Worst burst ms", "p99 ms", "Server CPU µs/delivery"],
                [.. results.Where(r => twin.Bare(r.Transport) is not null || results.Any(t => twin.Bare(t.Transport) == r.Transport)).SelectMany(r => r.Alternating.Select((p, i) => (IReadOnlyList<string>)[
                    r.Transport, Num(r.PeriodSeconds, "0.#"), Num(p.Clients), Num(i + 1), p.Verdict,
                    Num(p.WorstBurstMs, "0.0"), Num(p.Latency.P99Ms, "0.0"), Num(p.ServerCpuMicrosPerDelivery, "0.0")]))]));
        }

        AddTargets(section, results);
        return section;
    }

    /// <summary>
    /// The side-by-side rounds, with each transport's total CPU per delivery over the floor's and long polling's on the
    /// same protocol: client and server share the machine's cores, so the total is what sets capacity, and long polling's
    /// total over ours is the capacity ratio those costs predict.
    /// </summary>
    private static void AddSideBySide(ReportSection section, IReadOnlyList<BroadcastResult> results)
    {
        var rows = results.Select(r => (
            Result: r,
            Client: PairedRatio.MedianOf(r.Alternating.Select(p => p.ClientCpuMicrosPerDelivery)),
            Server: PairedRatio.MedianOf(r.Alternating.Select(p => p.ServerCpuMicrosPerDelivery)),
            ClientBytes: PairedRatio.MedianOf(r.Alternating.Select(p => p.ClientBytesPerDelivery)),
            ServerBytes: PairedRatio.MedianOf(r.Alternating.Select(p => p.ServerBytesPerDelivery)))).ToList();
        double Total(string prefix, BroadcastResult like) =>
            rows.FirstOrDefault(x => x.Result.Transport.StartsWith(prefix, StringComparison.Ordinal) && x.Result.Protocol == like.Protocol && x.Result.PeriodSeconds == like.PeriodSeconds)
                is { Result: not null } row ? row.Client + row.Server : double.NaN;
        section.Tables.Add(new ReportTable(
            "CPU and allocation per delivery, side by side (median of the rounds)",
            ["Transport", "HTTP", "P (s)", "M", "Rounds on time", "Client µs", "Server µs", "Total µs", "× floor", "Long polling's total ÷ this", "Client B", "Server B"],
            [.. rows.Select(x => (IReadOnlyList<string>)[
                x.Result.Transport, x.Result.Protocol, Num(x.Result.PeriodSeconds, "0.#"), Num(x.Result.Alternating.Count > 0 ? x.Result.Alternating[0].Clients : 0),
                $"{x.Result.Alternating.Count(p => p.Passed)} of {x.Result.Alternating.Count}",
                Num(x.Client, "0.0"), Num(x.Server, "0.0"), Num(x.Client + x.Server, "0.0"),
                Ratio((x.Client + x.Server) / Total(PubSubTransportChoice.Floor, x.Result)),
                Ratio(Total(PubSubTransportChoice.SignalRLongPolling, x.Result) / (x.Client + x.Server)),
                Num(x.ClientBytes, "N0"), Num(x.ServerBytes, "N0")])]));
        section.Tables.Add(new ReportTable(
            "Rounds",
            ["Transport", "HTTP", "P (s)", "M", "Round", "Result", "Worst burst ms", "p99 ms", "Client CPU µs/delivery", "Server CPU µs/delivery", "Client B/delivery", "Server B/delivery"],
            [.. results.SelectMany(r => r.Alternating.Select((p, i) => (IReadOnlyList<string>)[
                r.Transport, r.Protocol, Num(r.PeriodSeconds, "0.#"), Num(p.Clients), Num(i + 1), p.Verdict,
                Num(p.WorstBurstMs, "0.0"), Num(p.Latency.P99Ms, "0.0"), Num(p.ClientCpuMicrosPerDelivery, "0.0"), Num(p.ServerCpuMicrosPerDelivery, "0.0"),
                Num(p.ClientBytesPerDelivery, "N0"), Num(p.ServerBytesPerDelivery, "N0")]))]));
    }

    /// <summary>The client and server CPU per delivery of the K-burst probe that confirmed a result's M.</summary>
    private static string Cpu(BroadcastResult result) =>
        result.Probes.LastOrDefault(p => p.Passed && p.Clients == result.LargestClients) is { } p
            ? $"{p.ClientCpuMicrosPerDelivery:0.0} / {p.ServerCpuMicrosPerDelivery:0.0} µs"
            : "not measured";

    /// <summary>What each twin endpoint's difference costs: server CPU per delivery in the alternating rounds, or else the searches' M.</summary>
    private static void AddTwinTargets(ReportSection section, IReadOnlyList<BroadcastResult> results)
    {
        foreach (var twinned in results.Where(r => TwinEndpoint.Of(r.Transport) is not null))
        {
            var twin = TwinEndpoint.Of(twinned.Transport)!;
            if (results.FirstOrDefault(r => r.Transport == twin.Bare(twinned.Transport) && r.PeriodSeconds == twinned.PeriodSeconds) is not { } bare)
            {
                continue;
            }

            // The alternating rounds are the measure; the searches, minutes apart, are shown beside them.
            var what = $"Broadcast at P = {twinned.PeriodSeconds:0.#} s: {twin.Cost.What} cost ≤ {twin.Cost.MaxCost:0%} of the capacity";
            var searched = twinned.Probes.Count == 0 ? "no search (side by side)" : $"largest M searched separately: {twinned.LargestClients:N0} {twin.Label}, {bare.LargestClients:N0} on /pubsub";
            if (twinned.Alternating.Count > 0 && bare.Alternating.Count > 0)
            {
                IReadOnlyList<double> Cpu(BroadcastResult r) => [.. r.Alternating.Select(p => p.ServerCpuMicrosPerDelivery)];
                var (twinCpu, bareCpu) = (PairedRatio.MedianOf(Cpu(twinned)), PairedRatio.MedianOf(Cpu(bare)));
                var cost = twin.Cost.Of(bareCpu, twinCpu);
                var paired = twin.Cost.TwinHasIt ? PairedRatio.Of(Cpu(twinned), Cpu(bare)) : PairedRatio.Of(Cpu(bare), Cpu(twinned));
                section.Targets.Add(new TargetCheck(
                    $"{what} (server CPU per delivery, alternating rounds at M = {twinned.Alternating[0].Clients:N0})",
                    $"{cost:+0.0%;-0.0%} (/pubsub {bareCpu:0.0} µs, {twin.Label} {twinCpu:0.0} µs, median of {bare.Alternating.Count}; " +
                    $"rounds on time {bare.Alternating.Count(p => p.Passed)} vs {twinned.Alternating.Count(p => p.Passed)}; with ÷ without, round by round: {paired}); {searched}",
                    cost <= twin.Cost.MaxCost,
                    cost <= twin.Cost.MaxCost ? null : $"{cost:P1} more CPU per delivery with {twin.Cost.What}"));
            }
            else if (bare.LargestClients > 0 && twinned.LargestClients > 0)
            {
                var cost = twin.Cost.Of(twinned.LargestClients, bare.LargestClients);
                section.Targets.Add(new TargetCheck(
                    $"{what} (the searches' M)",
                    $"{cost:+0.0%;-0.0%}: {searched}; no alternating rounds ran",
                    cost <= twin.Cost.MaxCost,
                    cost <= twin.Cost.MaxCost ? null : $"{cost:P1} fewer clients with {twin.Cost.What}"));
            }
        }
    }

    private static void AddTargets(ReportSection section, IReadOnlyList<BroadcastResult> results)
    {
        AddTwinTargets(section, results);
        foreach (var ours in results.Where(r => r.Transport.StartsWith(PubSubTransportChoice.PollingDuplex, StringComparison.Ordinal)))
        {
            if (ours.PeriodSeconds == 1)
            {
                section.Targets.Add(new TargetCheck(
                    $"Broadcast at P = 1 s: ≥ 10,000 clients ({ours.Transport})",
                    Num(ours.LargestClients) + (ours.Limit is null ? string.Empty : $" ({ours.Limit})"),
                    ours.LargestClients >= 10_000,
                    ours.LargestClients >= 10_000 ? null : $"{10_000 - ours.LargestClients:N0} clients short"));
            }

            var peer = results.FirstOrDefault(r =>
                r.Transport.StartsWith(PubSubTransportChoice.SignalRLongPolling, StringComparison.Ordinal) && r.Protocol == ours.Protocol && r.PeriodSeconds == ours.PeriodSeconds);
            if (peer is { LargestClients: 0 } && ours.LargestClients > 0 && TwinEndpoint.Of(ours.Transport) is null)
            {
                // No ratio to a peer that confirmed nothing: its K-burst probes failed at every M tried, which says the machine, not the peer, set the figure.
                section.Targets.Add(new TargetCheck(
                    $"Broadcast at P = {ours.PeriodSeconds:0.#} s over {ours.Protocol}: ≥ 2× the clients of SignalR long polling",
                    $"not judged: long polling confirmed no M (its K-burst probes failed at {string.Join(", ", peer.Probes.Where(p => p.Bursts == ours.Bursts).Select(p => p.Clients.ToString("N0", CultureInfo.InvariantCulture)))}); ours {ours.LargestClients:N0}",
                    null,
                    null));
            }
            else if (peer is { LargestClients: > 0 } && TwinEndpoint.Of(ours.Transport) is null)
            {
                var ratio = (double)ours.LargestClients / peer.LargestClients;
                section.Targets.Add(new TargetCheck(
                    $"Broadcast at P = {ours.PeriodSeconds:0.#} s over {ours.Protocol}: ≥ 2× the clients of SignalR long polling",
                    $"{Ratio(ratio)} ({ours.LargestClients:N0} vs {peer.LargestClients:N0}; CPU per delivery at that M, client / server: ours {Cpu(ours)}, long polling {Cpu(peer)})",
                    ratio >= 2,
                    ratio >= 2 ? null : $"{Ratio(ratio)} of the 2× asked" + (ours.LimitReached ? $"; ours {ours.Limit}, so its true capacity is higher" : string.Empty)));
            }
        }
    }
}

/// <summary>The broadcast script's settings.</summary>
internal sealed record BroadcastSettings
{
    /// <summary>Gets the burst periods P to search at.</summary>
    public IReadOnlyList<TimeSpan> Periods { get; init; } = [TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(2), TimeSpan.FromSeconds(5), TimeSpan.FromSeconds(10)];

    /// <summary>Gets K: how many consecutive bursts must each finish before the next is due.</summary>
    public int Bursts { get; init; } = 100;

    /// <summary>Gets the bursts each scouting probe runs before the full K confirms the best M found.</summary>
    public int ScoutBursts { get; init; } = 5;

    /// <summary>Gets the first M tried.</summary>
    public int StartClients { get; init; } = 1000;

    /// <summary>
    /// Gets the largest M tried (also capped by the process's open-file limit, which over HTTP/1.1 is about 17,700 clients
    /// at a limit of 20,000; over HTTP/2 a hundred polls share a socket, so the CPU finds the limit first).
    /// </summary>
    public int MaxClients { get; init; } = 100_000;

    /// <summary>Gets the search's resolution: it stops when the pass/fail gap is at most this fraction of M.</summary>
    public double Resolution { get; init; } = 0.1;

    /// <summary>Gets how many clients connect at once.</summary>
    public int ConnectConcurrency { get; init; } = 64;

    /// <summary>Gets which transports run, one after the other.</summary>
    public PubSubTransportChoice Transports { get; init; } = PubSubTransportChoice.Ours;

    /// <summary>Gets how many K-burst probes each side of the rule comparison runs, alternating, at one M, after the searches.</summary>
    public int CompareRounds { get; init; } = 4;

    /// <summary>
    /// Gets the M at which every transport runs <see cref="CompareRounds"/> K-burst probes side by side, in alternating
    /// order with every fleet connected throughout, instead of searching; null to search. What each delivery costs at one
    /// scale, on the same machine at the same time: the 2× question without two searches minutes apart.
    /// </summary>
    public int? SideBySide { get; init; }
}

/// <summary>One try at M clients.</summary>
internal sealed record BroadcastProbe(int Clients, int Bursts, bool Passed, int BurstsOnTime, double WorstBurstMs, LatencySummary Latency, string? Failure)
{
    /// <summary>Gets the probe's result as the report's tables say it.</summary>
    public string Verdict => Passed ? "pass" : $"fail at burst {BurstsOnTime + 1}";

    /// <summary>Gets the processor time per delivered notification in the client process, in microseconds (NaN when not measured).</summary>
    public double ClientCpuMicrosPerDelivery { get; init; } = double.NaN;

    /// <summary>Gets the processor time per delivered notification in the server process, in microseconds (NaN when not measured).</summary>
    public double ServerCpuMicrosPerDelivery { get; init; } = double.NaN;

    /// <summary>Gets the bytes the client process allocated per delivered notification (NaN when not measured).</summary>
    public double ClientBytesPerDelivery { get; init; } = double.NaN;

    /// <summary>Gets the bytes the server process allocated per delivered notification (NaN when not measured).</summary>
    public double ServerBytesPerDelivery { get; init; } = double.NaN;
}

/// <summary>The search's outcome for one transport at one period.</summary>
/// <param name="Transport">The transport's name in the report.</param>
/// <param name="Protocol">The HTTP version its clients spoke, <c>HTTP/1.1</c> or <c>HTTP/2</c>.</param>
/// <param name="PeriodSeconds">P.</param>
/// <param name="Bursts">K.</param>
/// <param name="LargestClients">The largest M confirmed with all K bursts on time (0 if none).</param>
/// <param name="LimitReached">Whether the search stopped at its ceiling rather than at a failure.</param>
/// <param name="Limit">What the ceiling was, when it was reached; or, when no M held, that none did and down to what M the search went.</param>
/// <param name="Probes">Every probe, in order.</param>
internal sealed record BroadcastResult(string Transport, string Protocol, double PeriodSeconds, int Bursts, int LargestClients, bool LimitReached, string? Limit, IReadOnlyList<BroadcastProbe> Probes)
{
    /// <summary>Gets the probes of the topic-rule comparison's alternating rounds (<see cref="BroadcastSettings.CompareRounds"/>), if it ran.</summary>
    public IReadOnlyList<BroadcastProbe> Alternating { get; init; } = [];
}

/// <summary>
/// The original's broadcast script: M clients on one topic, a burst (one message to all of them) every P seconds. The
/// result is the largest M for which every one of K consecutive bursts reaches every client before the next is due.
/// A doubling-then-bisecting search scouts M with a few bursts per probe, then the full K confirms it, stepping down
/// until it holds. <paramref name="serverStats"/> reads the server's processor time when it is not the run's servers
/// (the redis command's nodes read Redis's).
/// </summary>
internal sealed class BroadcastRun(PerfContext context, BroadcastSettings settings, Func<CancellationToken, Task<ServerStats>>? serverStats = null)
{
    private const string Topic = "broadcast";

    public async Task<IReadOnlyList<BroadcastResult>> RunAsync(IReadOnlyList<IPubSubTransport> transports, CancellationToken cancellationToken)
    {
        var results = new List<BroadcastResult>();
        if (settings.SideBySide is { } sideBySide)
        {
            foreach (var period in settings.Periods)
            {
                var clients = transports.Select(t => Math.Min(sideBySide, context.CapacityFor(t.Protocol))).ToArray();
                var probes = await AlternateAsync(transports, clients, period, "side by side", cancellationToken);
                results.AddRange(transports.Select((t, i) => new BroadcastResult(
                    t.Name,
                    t.Protocol.Label(),
                    period.TotalSeconds,
                    settings.Bursts,
                    probes[i].All(p => p.Passed) ? clients[i] : 0,
                    false,
                    clients[i] < sideBySide ? $"side by side at {clients[i]:N0}, the open-file cap" : null,
                    []) { Alternating = probes[i] }));
            }

            return results;
        }

        foreach (var transport in transports)
        {
            foreach (var period in settings.Periods)
            {
                results.Add(await SearchAsync(transport, period, cancellationToken));
            }
        }

        await CompareTwinsAsync(transports, results, cancellationToken);
        return results;
    }

    /// <summary>
    /// Each search ran on its own, minutes apart, so on a shared machine their M differ by the load as much as by what the
    /// twin endpoints change. Here <c>/pubsub</c> and its twins run K-burst probes at the same M in alternating rounds; the
    /// server's CPU per delivery is what the difference would cost capacity.
    /// </summary>
    private async Task CompareTwinsAsync(IReadOnlyList<IPubSubTransport> transports, List<BroadcastResult> results, CancellationToken cancellationToken)
    {
        foreach (var bare in transports)
        {
            IReadOnlyList<IPubSubTransport> sides = [bare, .. transports.Where(t => TwinEndpoint.Of(t.Name)?.Bare(t.Name) == bare.Name)];
            foreach (var period in sides.Count > 1 ? settings.Periods : [])
            {
                var searched = results.Where(r => r.PeriodSeconds == period.TotalSeconds && sides.Any(s => s.Name == r.Transport)).Select(r => r.LargestClients);
                var clients = Math.Min(searched.Where(m => m > 0).DefaultIfEmpty(0).Min(), context.CapacityFor(bare.Protocol) / sides.Count);
                if (clients == 0)
                {
                    continue;
                }

                var probes = await AlternateAsync(sides, [.. sides.Select(_ => clients)], period, "twin endpoints against /pubsub", cancellationToken);
                for (var i = 0; i < sides.Count; i++)
                {
                    var index = results.FindIndex(r => r.Transport == sides[i].Name && r.PeriodSeconds == period.TotalSeconds);
                    results[index] = results[index] with { Alternating = probes[i] };
                }
            }
        }
    }

    /// <summary>
    /// Every side's fleet connected throughout; K-burst probes on each in turn, the order reversed every other round, so
    /// load from elsewhere falls on each alike. A first, unrecorded round warms every fleet's code and connections.
    /// </summary>
    /// <param name="clients">Each side's M.</param>
    /// <param name="what">What the rounds compare, for the console.</param>
    /// <returns>Each side's recorded probes, in the order of <paramref name="sides"/>.</returns>
    private async Task<List<BroadcastProbe>[]> AlternateAsync(
        IReadOnlyList<IPubSubTransport> sides, int[] clients, TimeSpan period, string what, CancellationToken cancellationToken)
    {
        var probes = sides.Select(_ => new List<BroadcastProbe>()).ToArray();
        var fleets = new List<(ClientFleet Fleet, IPubSubClient Publisher, BurstRun Run)>();
        try
        {
            foreach (var transport in sides)
            {
                var fleet = new ClientFleet(transport, Topic, settings.ConnectConcurrency);
                fleets.Add((fleet, await transport.ConnectAsync(static _ => { }, cancellationToken), new BurstRun(fleet)));
            }

            context.Console.MarkupLine(
                $"  {what}: an unrecorded round, then {settings.CompareRounds} alternating rounds of K = {settings.Bursts} at M = {clients.Max():N0}, P = {period.TotalSeconds:0.#} s");
            var order = Enumerable.Range(0, sides.Count).ToList();
            for (var round = -1; round < settings.CompareRounds; round++)
            {
                foreach (var i in round % 2 == 0 ? order : Enumerable.Reverse(order))
                {
                    var probe = await ProbeAsync(fleets[i].Run, fleets[i].Fleet, fleets[i].Publisher, sides[i], clients[i], period, settings.Bursts, cancellationToken);
                    if (round >= 0)
                    {
                        probes[i].Add(probe);
                    }
                }
            }
        }
        finally
        {
            foreach (var (fleet, publisher, _) in fleets)
            {
                await publisher.DisposeAsync();
                await fleet.DisposeAsync();
            }
        }

        return probes;
    }

    private async Task<BroadcastResult> SearchAsync(IPubSubTransport transport, TimeSpan period, CancellationToken cancellationToken)
    {
        var capacity = context.CapacityFor(transport.Protocol);
        var ceiling = Math.Min(settings.MaxClients, capacity);
        var capped = capacity < settings.MaxClients ? $"capped at {capacity:N0} by this process's open-file limit" : null;
        var probes = new List<BroadcastProbe>();
        await using var fleet = new ClientFleet(transport, Topic, settings.ConnectConcurrency);
        await using var publisher = await transport.ConnectAsync(static _ => { }, cancellationToken);
        var run = new BurstRun(fleet);
        var passed = 0;
        int? failed = null;
        var m = Math.Min(settings.StartClients, ceiling);
        var scout = Math.Min(settings.ScoutBursts, settings.Bursts);

        // Scout: double until a probe fails, then bisect.
        while (true)
        {
            var probe = await ProbeAsync(run, fleet, publisher, transport, m, period, scout, cancellationToken);
            probes.Add(probe);
            if (probe.Passed)
            {
                passed = m;
            }
            else
            {
                failed = m;
            }

            int next;
            if (failed is null)
            {
                if (m >= ceiling)
                {
                    break;
                }

                next = Math.Min(m * 2, ceiling);
            }
            else
            {
                if (failed.Value - passed <= Math.Max(10, passed * settings.Resolution))
                {
                    break;
                }

                next = (passed + failed.Value) / 2;
            }

            m = next;
        }

        // Confirm with all K bursts: step down by the resolution a few times, then halve, until an M holds. On a shared
        // machine a few seconds of someone else's load fail a K-burst probe, so a search that gave up after a few steps
        // read as no M at all; this one goes down to one client, and says so when even that failed.
        var confirmed = 0;
        var lowestTried = probes.Min(p => p.Clients);
        m = passed > 0 ? passed : lowestTried / 2;
        for (var step = 0; m >= 1; step++)
        {
            if (scout == settings.Bursts && probes.Any(p => p.Clients == m && p.Passed))
            {
                confirmed = m;
                break;
            }

            var probe = await ProbeAsync(run, fleet, publisher, transport, m, period, settings.Bursts, cancellationToken);
            probes.Add(probe);
            lowestTried = Math.Min(lowestTried, m);
            if (probe.Passed)
            {
                confirmed = m;
                break;
            }

            m = step < 4 ? Math.Min(m - 1, (int)(m * (1 - settings.Resolution))) : m / 2;
        }

        var reachedCeiling = confirmed >= ceiling;
        var limit = reachedCeiling ? capped ?? $"reached the search's maximum of {settings.MaxClients:N0}" : null;
        return new BroadcastResult(
            transport.Name,
            transport.Protocol.Label(),
            period.TotalSeconds,
            settings.Bursts,
            confirmed,
            reachedCeiling,
            confirmed == 0 ? $"no M held all {settings.Bursts:N0} bursts on time, down to {lowestTried:N0} client(s)" : limit,
            probes);
    }

    private async Task<BroadcastProbe> ProbeAsync(
        BurstRun run, ClientFleet fleet, IPubSubClient publisher, IPubSubTransport transport, int clients, TimeSpan period, int bursts, CancellationToken cancellationToken)
    {
        await context.Console.Status().StartAsync(
            $"{Markup.Escape(transport.Name)}: connecting {clients:N0} clients",
            async status => await fleet.ResizeAsync(
                clients,
                new Progress<int>(n => status.Status($"{Markup.Escape(transport.Name)}: {n:N0} of {clients:N0} clients connected")),
                cancellationToken));

        BroadcastProbe probe = null!;
        var stats = serverStats ?? context.Server.GetStatsAsync;
        var serverBefore = await stats(cancellationToken);
        var clientBefore = Environment.CpuUsage.TotalTime.TotalSeconds;
        var allocatedBefore = GC.GetTotalAllocatedBytes(precise: false);
        await context.Console.Status().StartAsync(
            $"{Markup.Escape(transport.Name)}: {clients:N0} clients, a burst every {period.TotalSeconds:0.#} s",
            async status => probe = await run.RunAsync(publisher, clients, period, bursts, b => status.Status(
                $"{Markup.Escape(transport.Name)}: {clients:N0} clients, P = {period.TotalSeconds:0.#} s, burst {b} of {bursts}"), cancellationToken));
        var clientCpu = Environment.CpuUsage.TotalTime.TotalSeconds - clientBefore;
        var clientAllocated = GC.GetTotalAllocatedBytes(precise: false) - allocatedBefore;
        var serverAfter = await stats(cancellationToken);
        if (probe.Latency.Count > 0)
        {
            // Warm-up burst included on both sides of the division: it is one more delivery per client.
            var deliveries = probe.Latency.Count + (double)clients;
            probe = probe with
            {
                ClientCpuMicrosPerDelivery = clientCpu * 1e6 / deliveries,
                ServerCpuMicrosPerDelivery = serverAfter.IsKnown ? (serverAfter.CpuSeconds - serverBefore.CpuSeconds) * 1e6 / deliveries : double.NaN,
                ClientBytesPerDelivery = clientAllocated / deliveries,
                ServerBytesPerDelivery = serverAfter.IsKnown && serverBefore.AllocatedBytes >= 0 ? (serverAfter.AllocatedBytes - serverBefore.AllocatedBytes) / deliveries : double.NaN,
            };
        }

        var verdict = probe.Passed ? "[green]pass[/]" : $"[red]fail[/] ({Markup.Escape(probe.Failure ?? string.Empty)})";
        context.Console.MarkupLine(
            $"  {Markup.Escape(transport.Name)} P={period.TotalSeconds:0.#}s M={clients:N0} K={bursts}: {verdict}, worst burst {probe.WorstBurstMs:0.0} ms, p99 {probe.Latency.P99Ms:0.0} ms, " +
            $"CPU per delivery: client {probe.ClientCpuMicrosPerDelivery:0.0} µs, server {probe.ServerCpuMicrosPerDelivery:0.0} µs; " +
            $"allocated per delivery: client {probe.ClientBytesPerDelivery:N0} B, server {probe.ServerBytesPerDelivery:N0} B");
        if (transport is ITransportDiagnostics { Faults: > 0 } diagnostics)
        {
            context.Console.MarkupLine($"  [yellow]{diagnostics.Faults} client(s) failed so far; first: {Markup.Escape(diagnostics.FirstFault ?? string.Empty)}[/]");
        }

        return probe;
    }

    /// <summary>Publishes bursts and counts who got them. Stamps carry a probe number, so a late message from an earlier probe is not counted.</summary>
    private sealed class BurstRun
    {
        private int _probe;
        private int _clients;
        private int[] _counts = [];
        private int[] _lastBurst = [];
        private TaskCompletionSource[] _complete = [];
        private long[] _completedAt = [];
        private LatencyRecorder _latency = new();
        private long _outOfOrder;

        public BurstRun(ClientFleet fleet) => fleet.OnNotification = OnNotification;

        public async Task<BroadcastProbe> RunAsync(IPubSubClient publisher, int clients, TimeSpan period, int bursts, Action<int> progress, CancellationToken cancellationToken)
        {
            // A new probe number first: from here on, stragglers of the last probe are ignored.
            var probe = Interlocked.Increment(ref _probe);

            // Burst 0 warms every client up (first polls, JIT) and is not judged, but must arrive.
            _counts = new int[bursts + 1];
            _complete = [.. Enumerable.Range(0, bursts + 1).Select(_ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously))];
            _completedAt = new long[bursts + 1];
            _lastBurst = new int[clients];
            Array.Fill(_lastBurst, -1);
            _latency = new LatencyRecorder();
            Interlocked.Exchange(ref _outOfOrder, 0);
            _clients = clients;

            var warmup = Stamp.Now(probe, 0);
            await publisher.PublishAsync(Topic, warmup.ToJson(), cancellationToken);
            if (await Task.WhenAny(_complete[0].Task, Task.Delay(TimeSpan.FromSeconds(60), cancellationToken)) != _complete[0].Task)
            {
                return new BroadcastProbe(clients, bursts, false, 0, double.NaN, LatencySummary.Empty, $"the warm-up burst reached {Volatile.Read(ref _counts[0]):N0} of {clients:N0} clients in 60 s");
            }

            _latency = new LatencyRecorder();
            var start = Stopwatch.GetTimestamp() + Stopwatch.Frequency / 10;
            var periodTicks = (long)(period.TotalSeconds * Stopwatch.Frequency);
            double worst = 0;
            for (var b = 1; b <= bursts; b++)
            {
                progress(b);
                var due = start + (b - 1) * periodTicks;
                await DelayUntilAsync(due, cancellationToken);
                var stamp = Stamp.Now(probe, b);
                await publisher.PublishAsync(Topic, stamp.ToJson(), cancellationToken);
                var next = due + periodTicks;
                var remaining = Stopwatch.GetElapsedTime(Stopwatch.GetTimestamp(), next);
                var finished = remaining > TimeSpan.Zero
                    && await Task.WhenAny(_complete[b].Task, Task.Delay(remaining, cancellationToken)) == _complete[b].Task;
                if (!finished || _completedAt[b] > next)
                {
                    var got = Volatile.Read(ref _counts[b]);
                    return new BroadcastProbe(clients, bursts, false, b - 1, Math.Max(worst, Ms(next - stamp.Timestamp)), _latency.Summarize(),
                        $"burst {b} reached {got:N0} of {clients:N0} clients before the next was due");
                }

                worst = Math.Max(worst, Ms(_completedAt[b] - stamp.Timestamp));
            }

            var outOfOrder = Interlocked.Read(ref _outOfOrder);
            return outOfOrder > 0
                ? new BroadcastProbe(clients, bursts, false, bursts, worst, _latency.Summarize(), $"{outOfOrder} notifications arrived twice or out of order")
                : new BroadcastProbe(clients, bursts, true, bursts, worst, _latency.Summarize(), null);
        }

        private void OnNotification(int client, ReadOnlySpan<byte> data)
        {
            var now = Stopwatch.GetTimestamp();
            if (!Stamp.TryParse(data, out var stamp) || stamp.Key != Volatile.Read(ref _probe) || client >= _clients || stamp.Burst >= _counts.Length)
            {
                return;
            }

            // Each client must see bursts once each, in order.
            ref var last = ref _lastBurst[client];
            if (stamp.Burst <= last)
            {
                Interlocked.Increment(ref _outOfOrder);
                return;
            }

            last = stamp.Burst;
            _latency.Record(now - stamp.Timestamp);
            if (Interlocked.Increment(ref _counts[stamp.Burst]) == _clients)
            {
                _completedAt[stamp.Burst] = now;
                _complete[stamp.Burst].TrySetResult();
            }
        }

        private static async Task DelayUntilAsync(long timestamp, CancellationToken cancellationToken)
        {
            var wait = Stopwatch.GetElapsedTime(Stopwatch.GetTimestamp(), timestamp);
            if (wait > TimeSpan.Zero)
            {
                await Task.Delay(wait, cancellationToken);
            }
        }

        private static double Ms(long ticks) => ticks * 1000.0 / Stopwatch.Frequency;
    }
}
