using System.CommandLine;
using System.Globalization;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Servers;
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
    private readonly Option<double[]> _periods = new("--periods") { Description = "Burst periods P in seconds. Default: 1 2 5 10.", DefaultValueFactory = _ => [1, 2, 5, 10], AllowMultipleArgumentsPerToken = true };
    private readonly Option<int> _bursts = PositiveInt("--bursts", "K: consecutive bursts that must each arrive before the next is due.", 100);
    private readonly Option<int> _scoutBursts = PositiveInt("--scout-bursts", "Bursts per scouting probe, before K confirms.", 5);
    private readonly Option<int> _startClients = PositiveInt("--start-clients", "The first M tried.", 1000);
    private readonly Option<int> _maxClients = PositiveInt(
        "--max-clients", "The largest M tried (the open-file limit may cap it lower: over HTTP/1.1 every client is a socket in each process).", 100_000);
    private readonly Option<string[]> _http = new("--http")
    {
        Description = "HTTP versions ours and SignalR long polling run on, each a search of its own: 1.1 (a connection per client, so the open-file limit caps M), " +
            "2 (h2c with prior knowledge, up to 100 clients' polls on a connection), or both (--http 1.1 2). SignalR WebSockets always runs on HTTP/1.1. Default: 2.",
        DefaultValueFactory = _ => ["2"],
        AllowMultipleArgumentsPerToken = true,
    };

    private readonly Option<int> _sideBySide = new("--side-by-side")
    {
        Description = "Instead of searching, run every transport at this M, each fleet connected throughout, in --rounds alternating K-burst probes: CPU per delivery at one scale, side by side.",
    };

    private readonly Option<int> _rounds = PositiveInt("--rounds", "Alternating K-burst probes per transport, side by side or for --topic-rule compare.", 4, max: 50);

    private readonly Option<double> _resolution = PositiveDouble("--resolution", "The search stops when the pass/fail gap is at most this fraction of M (0.02 resolves a 5% difference).", 0.1);

    /// <summary>Initializes a new instance of the <see cref="BroadcastScenario"/> class.</summary>
    /// <param name="transports">The transport options, shared with collaboration in the peer command.</param>
    public BroadcastScenario(PubSubTransportOptions transports)
    {
        _transports = transports;
        _periods.Validators.Add(r =>
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
        _sideBySide.Validators.Add(r =>
        {
            if (r.GetValueOrDefault<int>() is < 1 or > 100_000)
            {
                r.AddError($"--side-by-side must be from 1 to 100000 clients; got {r.GetValueOrDefault<int>()}.");
            }
        });
        _startClients.Validators.Add(r =>
        {
            // An option the command line left out reads 0 from here, not its default: compare only with a given maximum.
            if (!r.Implicit && r.GetResult(_maxClients) is { Implicit: false } max && r.GetValue(_startClients) > max.GetValueOrDefault<int>())
            {
                r.AddError($"--start-clients ({r.GetValue(_startClients)}) must not exceed --max-clients ({max.GetValueOrDefault<int>()}).");
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
        command.Add(_periods);
        command.Add(_bursts);
        command.Add(_scoutBursts);
        command.Add(_startClients);
        command.Add(_maxClients);
        command.Add(_resolution);
        command.Add(_http);
        command.Add(_sideBySide);
        command.Add(_rounds);
        TopicRuleEndpoint.AddTo(command);
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
            Transports = PubSubTransportChoice.All with { Protocols = [ClientProtocol.Http2, ClientProtocol.Http11] },
        };

    public override BroadcastSettings ReadSettings(ParseResult parse, bool quick)
    {
        var basis = quick ? Quick : new BroadcastSettings();
        var settings = basis with
        {
            Periods = IsExplicit(parse, _periods) ? [.. parse.GetValue(_periods)!.Select(TimeSpan.FromSeconds)] : basis.Periods,
            Bursts = Explicit(parse, _bursts) ?? basis.Bursts,
            ScoutBursts = Explicit(parse, _scoutBursts) ?? basis.ScoutBursts,
            StartClients = Explicit(parse, _startClients) ?? basis.StartClients,
            MaxClients = Explicit(parse, _maxClients) ?? basis.MaxClients,
            Resolution = Math.Min(Explicit(parse, _resolution) ?? basis.Resolution, 0.5),
            Transports = _transports.Read(parse) with { Protocols = [.. parse.GetValue(_http)!.Select(v => ClientProtocols.Parse(v)!.Value).Distinct()] },
            CompareTopicRule = TopicRuleEndpoint.Compare(parse),
            CompareRounds = Explicit(parse, _rounds) ?? basis.CompareRounds,
            SideBySide = IsExplicit(parse, _sideBySide) ? parse.GetValue(_sideBySide) : null,
        };
        return settings with { StartClients = Math.Min(settings.StartClients, settings.MaxClients) };
    }

    public override Task<IReadOnlyList<BroadcastResult>> RunAsync(PerfContext context, BroadcastSettings settings, CancellationToken cancellationToken) =>
        TopicRuleEndpoint.UseAsync(settings.Transports, settings.CompareTopicRule, context, list => new BroadcastRun(context, settings).RunAsync(list, cancellationToken));

    /// <summary>The median server CPU per delivery over probes: what one delivery costs, rule or no rule.</summary>
    private static double MedianCpu(IReadOnlyList<BroadcastProbe> probes)
    {
        var cpu = probes.Select(p => p.ServerCpuMicrosPerDelivery).Where(double.IsFinite).Order().ToList();
        return cpu.Count == 0 ? double.NaN : cpu.Count % 2 == 1 ? cpu[cpu.Count / 2] : (cpu[(cpu.Count / 2) - 1] + cpu[cpu.Count / 2]) / 2;
    }

    public override ReportSection Report(IReadOnlyList<BroadcastResult> results, BroadcastSettings settings, PerfContext context)
    {
        var section = NewSection(
            "Broadcast: largest M clients on one topic, a burst every P seconds",
            $"M clients subscribe to one topic; a publisher sends one message every P seconds. M passes when each of K = {settings.Bursts} consecutive bursts " +
            "reaches every client before the next is due. The search doubles M from " +
            $"{settings.StartClients:N0} until a probe fails, bisects to within {settings.Resolution:P0} with {settings.ScoutBursts}-burst probes, then confirms with all K bursts.",
            results);
        section.Tables.Add(new ReportTable(
            "Largest M",
            ["Transport", "HTTP", "P (s)", "K", "Largest M", "Limit"],
            [.. results.Select(r => (IReadOnlyList<string>)[r.Transport, r.Protocol, Num(r.PeriodSeconds, "0.#"), Num(r.Bursts), Num(r.LargestClients), r.Limit ?? string.Empty])]));
        section.Tables.Add(new ReportTable(
            "Probes",
            ["Transport", "HTTP", "P (s)", "M", "Bursts", "Result", "Worst burst ms", "p50 ms", "p99 ms", "Client CPU µs/delivery", "Server CPU µs/delivery", "Failure"],
            [.. results.SelectMany(r => r.Probes.Select(p => (IReadOnlyList<string>)[
                r.Transport, r.Protocol, Num(r.PeriodSeconds, "0.#"), Num(p.Clients), Num(p.Bursts), p.Passed ? "pass" : $"fail at burst {p.BurstsOnTime + 1}",
                Num(p.WorstBurstMs, "0.0"), Num(p.Latency.P50Ms, "0.0"), Num(p.Latency.P99Ms, "0.0"),
                Num(p.ClientCpuMicrosPerDelivery, "0.0"), Num(p.ServerCpuMicrosPerDelivery, "0.0"), p.Failure ?? string.Empty]))]));
        if (settings.SideBySide is { } m)
        {
            section.Notes.Add($"Side by side, no search: every transport's fleet of M = {m:N0} clients stays connected while each runs {settings.CompareRounds} K-burst probes in turn, " +
                "the order reversed every other round; each figure is the median over its rounds. Client and server share the machine's cores, so the total per delivery is what sets capacity.");
            AddSideBySide(section, results);
            return section;
        }

        if (results.Any(r => r.Alternating.Count > 0))
        {
            section.Tables.Add(new ReportTable(
                "A trivial topic rule against none: alternating rounds at one M",
                ["Transport", "P (s)", "M", "Round", "Result", "Worst burst ms", "p99 ms", "Server CPU µs/delivery"],
                [.. results.SelectMany(r => r.Alternating.Select((p, i) => (IReadOnlyList<string>)[
                    r.Transport, Num(r.PeriodSeconds, "0.#"), Num(p.Clients), Num(i + 1), p.Passed ? "pass" : $"fail at burst {p.BurstsOnTime + 1}",
                    Num(p.WorstBurstMs, "0.0"), Num(p.Latency.P99Ms, "0.0"), Num(p.ServerCpuMicrosPerDelivery, "0.0")]))]));
        }

        section.Charts.Add(new Chart(
            "broadcast-clients",
            "Broadcast: largest M clients by burst period",
            ChartKind.GroupedBar,
            "Burst period P",
            "Largest M (clients)",
            [.. results.Select(r => new ChartPoint(r.Transport, $"P = {r.PeriodSeconds:0.#} s", r.PeriodSeconds, Math.Max(r.LargestClients, 0)))]));
        if (results.Any(r => r.Protocol == ClientProtocol.Http2.Label()))
        {
            section.Notes.Add(
                $"HTTP/2 is cleartext with prior knowledge (h2c) on the server's second loopback port, for ours and SignalR long polling alike: one Kestrel listener " +
                $"allowing {PerfServer.Http2StreamsPerConnection} streams a connection, one client handler that opens another connection when those are taken " +
                "(EnableMultipleHttp2Connections), so a client's poll is a stream, not a socket. Over HTTP/1.1 every client is a socket in each process, and the " +
                "open-file limit caps M; SignalR WebSockets runs on HTTP/1.1 only.");
        }

        AddTargets(section, results);
        return section;
    }

    private static double Median(IEnumerable<double> values)
    {
        var sorted = values.Where(double.IsFinite).Order().ToList();
        return sorted.Count == 0 ? double.NaN : sorted.Count % 2 == 1 ? sorted[sorted.Count / 2] : (sorted[(sorted.Count / 2) - 1] + sorted[sorted.Count / 2]) / 2;
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
            Client: Median(r.Alternating.Select(p => p.ClientCpuMicrosPerDelivery)),
            Server: Median(r.Alternating.Select(p => p.ServerCpuMicrosPerDelivery)),
            ClientBytes: Median(r.Alternating.Select(p => p.ClientBytesPerDelivery)),
            ServerBytes: Median(r.Alternating.Select(p => p.ServerBytesPerDelivery)))).ToList();
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
                r.Transport, r.Protocol, Num(r.PeriodSeconds, "0.#"), Num(p.Clients), Num(i + 1), p.Passed ? "pass" : $"fail at burst {p.BurstsOnTime + 1}",
                Num(p.WorstBurstMs, "0.0"), Num(p.Latency.P99Ms, "0.0"), Num(p.ClientCpuMicrosPerDelivery, "0.0"), Num(p.ServerCpuMicrosPerDelivery, "0.0"),
                Num(p.ClientBytesPerDelivery, "N0"), Num(p.ServerBytesPerDelivery, "N0")]))]));
    }

    /// <summary>The client and server CPU per delivery of the K-burst probe that confirmed a result's M.</summary>
    private static string Cpu(BroadcastResult result) =>
        result.Probes.LastOrDefault(p => p.Passed && p.Clients == result.LargestClients) is { } p
            ? $"{p.ClientCpuMicrosPerDelivery:0.0} / {p.ServerCpuMicrosPerDelivery:0.0} µs"
            : "not measured";

    private static void AddTargets(ReportSection section, IReadOnlyList<BroadcastResult> results)
    {
        foreach (var ruled in results.Where(r => TopicRuleEndpoint.WithoutRule(r.Transport) is not null))
        {
            if (results.FirstOrDefault(r => r.Transport == TopicRuleEndpoint.WithoutRule(ruled.Transport) && r.PeriodSeconds == ruled.PeriodSeconds) is not { } bare)
            {
                continue;
            }

            // The alternating rounds are the measure; the searches, minutes apart, are shown beside them.
            var searched = $"largest M searched separately: {ruled.LargestClients:N0} with the rule, {bare.LargestClients:N0} without";
            if (ruled.Alternating.Count > 0 && bare.Alternating.Count > 0)
            {
                var (ruledCpu, bareCpu) = (MedianCpu(ruled.Alternating), MedianCpu(bare.Alternating));
                var cost = ruledCpu / bareCpu - 1;
                section.Targets.Add(new TargetCheck(
                    $"Broadcast at P = {ruled.PeriodSeconds:0.#} s: a trivial topic rule costs ≤ 5% of the capacity (server CPU per delivery, alternating rounds at M = {ruled.Alternating[0].Clients:N0})",
                    $"{cost:+0.0%;-0.0%} ({ruledCpu:0.0} vs {bareCpu:0.0} µs, median of {ruled.Alternating.Count}; rounds on time {ruled.Alternating.Count(p => p.Passed)} vs {bare.Alternating.Count(p => p.Passed)}); {searched}",
                    cost <= 0.05,
                    cost <= 0.05 ? null : $"{cost:P1} more CPU per delivery with the rule"));
            }
            else if (bare.LargestClients > 0)
            {
                var ratio = (double)ruled.LargestClients / bare.LargestClients;
                section.Targets.Add(new TargetCheck(
                    $"Broadcast at P = {ruled.PeriodSeconds:0.#} s: a trivial topic rule costs ≤ 5% of the clients",
                    $"{Ratio(ratio)}: {searched}; no alternating rounds ran",
                    ratio >= 0.95,
                    ratio >= 0.95 ? null : $"{1 - ratio:P1} fewer clients with the rule"));
            }
        }

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
            if (peer is { LargestClients: 0 } && ours.LargestClients > 0 && TopicRuleEndpoint.WithoutRule(ours.Transport) is null)
            {
                // No ratio to a peer that confirmed nothing: its K-burst probes failed at every M tried, which says the machine, not the peer, set the figure.
                section.Targets.Add(new TargetCheck(
                    $"Broadcast at P = {ours.PeriodSeconds:0.#} s over {ours.Protocol}: ≥ 2× the clients of SignalR long polling",
                    $"not judged: long polling confirmed no M (its K-burst probes failed at {string.Join(", ", peer.Probes.Where(p => p.Bursts == ours.Bursts).Select(p => p.Clients.ToString("N0", CultureInfo.InvariantCulture)))}); ours {ours.LargestClients:N0}",
                    null,
                    null));
            }
            else if (peer is { LargestClients: > 0 } && TopicRuleEndpoint.WithoutRule(ours.Transport) is null)
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
