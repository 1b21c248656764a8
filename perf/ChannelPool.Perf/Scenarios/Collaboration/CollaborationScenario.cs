using System.CommandLine;
using System.Globalization;
using ChannelPool.Perf.Reporting;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Collaboration;

/// <summary>
/// The <c>collaboration</c> command: T topics × N clients, one publishes and the rest receive, every D; publish to
/// receipt latency. Targets: mean ≤ 10 ms and p99 ≤ 50 ms on the original's rows, and p99 2× better than SignalR
/// long polling.
/// </summary>
internal sealed class CollaborationScenario : PerfScenario<CollaborationSettings, IReadOnlyList<CollaborationResult>>
{
    private readonly PubSubTransportOptions _transports;
    private readonly Option<int> _iterations = PositiveInt("--iterations", "Publishes per topic (the original: at least 100).", 100);
    private readonly Option<int> _warmup = new("--warmup")
    {
        Description = "Iterations every topic runs before the clock, unrecorded, then a full collection in both processes; 0 for none. Default: 2.",
        DefaultValueFactory = _ => 2,
    };

    private readonly Option<double> _delayScale = PositiveDouble("--delay-scale", "A factor on every D, to shorten a run (1 keeps the original's delays).", 1);
    private readonly Option<string> _rows = new("--rows") { Description = "Which rows: original (the seven of the 2009 table), stretch, or all (default).", DefaultValueFactory = _ => "all" };
    private readonly Option<string> _phase = new("--phase") { Description = "spread (default): topics publish out of step, evenly over D, as independent clients would; aligned: every topic publishes at the same instant (the worst case).", DefaultValueFactory = _ => "spread" };
    private readonly Option<string[]> _row = new("--row") { Description = "A custom row T,N,D (D in seconds), instead of --rows; repeatable.", AllowMultipleArgumentsPerToken = false };

    /// <summary>Initializes a new instance of the <see cref="CollaborationScenario"/> class.</summary>
    /// <param name="transports">The transport options, shared with broadcast in the peer command.</param>
    public CollaborationScenario(PubSubTransportOptions transports)
    {
        _transports = transports;
        _rows.AcceptOnlyFromAmong("original", "stretch", "all");
        _warmup.Validators.Add(r =>
        {
            var value = r.GetValueOrDefault<int>();
            if (value is < 0 or > 100)
            {
                r.AddError($"--warmup must be from 0 to 100 iterations; got {value}.");
            }
        });
        _phase.AcceptOnlyFromAmong("spread", "aligned");
        _row.Validators.Add(r =>
        {
            foreach (var value in r.GetValueOrDefault<string[]>() ?? [])
            {
                if (!TryParseRow(value, out _))
                {
                    r.AddError($"--row must be T,N,D: topics (1 or more), clients per topic (2 or more) and seconds (0 or more); got '{value}'.");
                }
            }
        });
    }

    public override string Name => "collaboration";

    public override string Description => "The original's collaboration script: T topics × N clients, one publishes and the rest receive, every D; publish-to-receipt latency.";

    /// <summary>Gets the quick run's sizes: two small rows, two iterations.</summary>
    private static CollaborationSettings Quick { get; } = new()
    {
        Rows = [new CollaborationRow(10, 2, TimeSpan.FromSeconds(0.1)), new CollaborationRow(4, 5, TimeSpan.FromSeconds(0.1))],
        Iterations = 2,
    };

    public override void AddOptions(Command command)
    {
        _transports.AddTo(command);
        command.Add(_iterations);
        command.Add(_warmup);
        command.Add(_delayScale);
        command.Add(_rows);
        command.Add(_row);
        command.Add(_phase);
        Broadcast.TopicRuleEndpoint.AddTo(command);
    }

    /// <summary>
    /// The suite's collaboration: the original's seven rows, three iterations, or as many as a row needs for 1,000
    /// publishes (100×5 runs 10), every D at a tenth, ours beside both SignalR peers.
    /// </summary>
    public override CollaborationSettings SuiteSettings(bool quick) =>
        (quick ? Quick : new CollaborationSettings { Rows = CollaborationRow.Original7, Iterations = 3, DelayScale = 0.1, EnoughForP99 = true }) with { Transports = PubSubTransportChoice.All };

    public override CollaborationSettings ReadSettings(ParseResult parse, bool quick)
    {
        var basis = quick ? Quick : new CollaborationSettings();
        IReadOnlyList<CollaborationRow> rows = parse.GetValue(_row) is { Length: > 0 } custom
            ? [.. custom.Select(v => TryParseRow(v, out var row) ? row : throw new ArgumentException($"Bad --row '{v}'."))]
            : IsExplicit(parse, _rows)
                ? parse.GetValue(_rows) switch
                {
                    "original" => CollaborationRow.Original7,
                    "stretch" => CollaborationRow.Stretch,
                    _ => [.. CollaborationRow.Original7, .. CollaborationRow.Stretch],
                }
                : basis.Rows;
        return basis with
        {
            Rows = rows,
            Iterations = Explicit(parse, _iterations) ?? basis.Iterations,
            WarmupIterations = Explicit(parse, _warmup) ?? basis.WarmupIterations,
            DelayScale = Explicit(parse, _delayScale) ?? basis.DelayScale,
            Phase = parse.GetValue(_phase) == "aligned" ? CollaborationPhase.Aligned : CollaborationPhase.Spread,
            Transports = _transports.Read(parse),
            CompareTopicRule = Broadcast.TopicRuleEndpoint.Compare(parse),
        };
    }

    public override Task<IReadOnlyList<CollaborationResult>> RunAsync(PerfContext context, CollaborationSettings settings, CancellationToken cancellationToken)
    {
        // After broadcast, on fresh connections: no idle pool left to expire all at once under the first row's clock.
        context.RenewConnections();
        return Broadcast.TopicRuleEndpoint.UseAsync(settings.Transports, settings.CompareTopicRule, context, list => new CollaborationRun(context, settings).RunAsync(list, cancellationToken));
    }

    public override ReportSection Report(IReadOnlyList<CollaborationResult> results, CollaborationSettings settings, PerfContext context)
    {
        var section = NewSection(
            "Collaboration: T topics × N clients, publish to receipt latency",
            (settings.Phase == CollaborationPhase.Spread
                ? "In every topic, one client publishes and the other N − 1 receive; then the topic is quiet for D. The topics run out of step, as independent clients would: topic t starts t/T of D late, so the T topics' publishes are spread evenly over D. "
                : "In every topic at the same instant, one client publishes and the other N − 1 receive; then the topic is quiet for D. The topics run in step, so every iteration is a synchronised burst of T publishes: the worst case. ") +
            $"{settings.Iterations} iterations per topic" +
            (settings.EnoughForP99 ? $", or more where a row needs them for {CollaborationSettings.P99Publishes:N0} publishes; a row's p99 is judged only over that many" : string.Empty) +
            (settings.DelayScale == 1.0 ? "." : $"; every D is scaled by {settings.DelayScale:0.###} to shorten the run (shorter quiet time means more load, not less)."),
            results);
        section.Tables.Add(new ReportTable(
            "Latency (ms)",
            ["Transport", "T×N, D", "Clients", "Publishes", "Mean", "Median", "Stdev", "p99", "Max", "Lost", "Duplicated", "Original mean / median / stdev"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Transport, r.Row.Label, Num(r.Row.Clients), Num(Publishes(r)), Num(r.Latency.MeanMs, "0.0"), Num(r.Latency.MedianMs, "0.0"), Num(r.Latency.StdevMs, "0.0"),
                Num(r.Latency.P99Ms, "0.0"), Num(r.Latency.MaxMs, "0.0"), r.Limit ?? $"{r.Lost:N0} of {r.Expected:N0}", Num(r.Duplicates),
                r.Row.Original is { } o ? $"{o.MeanMs:0} / {o.MedianMs:0} / {o.StdevMs:0}" : "—"])]));
        section.Charts.Add(new Chart(
            "collaboration-p99",
            "Collaboration: p99 latency by row",
            ChartKind.GroupedBar,
            "T×N, D",
            "p99 latency (ms)",
            [.. results.Where(r => r.Latency.Count > 0).Select(r => new ChartPoint(r.Transport, r.Row.Label, 0, Math.Max(r.Latency.P99Ms, 0.01)))],
            LogScaleY: true));
        section.Charts.Add(new Chart(
            "collaboration-mean",
            "Collaboration: mean latency by row",
            ChartKind.GroupedBar,
            "T×N, D",
            "Mean latency (ms)",
            [.. results.Where(r => r.Latency.Count > 0).Select(r => new ChartPoint(r.Transport, r.Row.Label, 0, Math.Max(r.Latency.MeanMs, 0.01))),
             .. results.Where(r => r.Row.Original is not null).DistinctBy(r => r.Row).Select(r => new ChartPoint("original (2009)", r.Row.Label, 0, Math.Max(r.Row.Original!.MeanMs, 0.01)))],
            LogScaleY: true));
        if (results.Any(r => Broadcast.TopicRuleEndpoint.WithoutRule(r.Transport) is not null))
        {
            section.Tables.Add(new ReportTable(
                "A trivial topic rule against no rule (ms)",
                ["T×N, D", "Mean without", "Mean with", "p99 without", "p99 with", "Lost with the rule"],
                [.. results.Where(r => Broadcast.TopicRuleEndpoint.WithoutRule(r.Transport) is not null && r.Latency.Count > 0)
                    .Select(ruled => (Ruled: ruled, Bare: results.FirstOrDefault(b => b.Transport == Broadcast.TopicRuleEndpoint.WithoutRule(ruled.Transport) && b.Row == ruled.Row)))
                    .Where(pair => pair.Bare is { Latency.Count: > 0 })
                    .Select(pair => (IReadOnlyList<string>)[
                        pair.Ruled.Row.Label, Num(pair.Bare!.Latency.MeanMs, "0.0"), Num(pair.Ruled.Latency.MeanMs, "0.0"),
                        Num(pair.Bare.Latency.P99Ms, "0.0"), Num(pair.Ruled.Latency.P99Ms, "0.0"), $"{pair.Ruled.Lost:N0} of {pair.Ruled.Expected:N0}"])]));
        }

        AddTargets(section, results);
        return section;
    }

    private static void AddTargets(ReportSection section, IReadOnlyList<CollaborationResult> results)
    {
        foreach (var ours in results.Where(r => r.Transport.StartsWith(PubSubTransportChoice.PollingDuplex, StringComparison.Ordinal) && r.Latency.Count > 0))
        {
            if (ours.Row.Original is not null)
            {
                var mean = ours.Latency.MeanMs;
                var p99 = ours.Latency.P99Ms;
                var publishes = Publishes(ours);
                var enough = publishes >= CollaborationSettings.P99Publishes;
                section.Targets.Add(new TargetCheck(
                    $"Collaboration {ours.Row.Label}: mean ≤ 10 ms and p99 ≤ 50 ms ({ours.Transport})",
                    $"mean {mean:0.0} ms, p99 {p99:0.0} ms over {publishes:N0} publishes (original mean {ours.Row.Original.MeanMs:0} ms)",
                    mean > 10 ? false : enough ? p99 <= 50 : null,
                    mean <= 10 && p99 <= 50 ? (enough ? null : $"p99 not judged: {publishes:N0} publishes, fewer than {CollaborationSettings.P99Publishes:N0}")
                        : $"mean {Over(mean, 10)}, p99 {Over(p99, 50)}" + (enough ? string.Empty : $" (p99 over only {publishes:N0} publishes)")));
            }

            if (results.FirstOrDefault(r => r.Transport == PubSubTransportChoice.SignalRLongPolling && r.Row == ours.Row && r.Latency.Count > 0) is { } peer)
            {
                var ratio = peer.Latency.P99Ms / Math.Max(ours.Latency.P99Ms, 0.001);
                section.Targets.Add(new TargetCheck(
                    $"Collaboration {ours.Row.Label}: p99 ≥ 2× better than SignalR long polling",
                    $"{Ratio(ratio)} ({ours.Latency.P99Ms:0.0} vs {peer.Latency.P99Ms:0.0} ms)",
                    ratio >= 2,
                    ratio >= 2 ? null : $"{Ratio(ratio)} of the 2× asked"));
            }
        }
    }

    private static long Publishes(CollaborationResult r) => (long)r.Row.Topics * r.Iterations;

    private static string Over(double value, double limit) =>
        value <= limit ? "within" : $"{value - limit:0.0} ms over";

    private static bool TryParseRow(string value, out CollaborationRow row)
    {
        row = null!;
        var parts = value.Split(',');
        if (parts.Length != 3
            || !int.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out var topics) || topics < 1
            || !int.TryParse(parts[1], NumberStyles.None, CultureInfo.InvariantCulture, out var clients) || clients < 2
            || !double.TryParse(parts[2], NumberStyles.Float, CultureInfo.InvariantCulture, out var delay) || !(delay >= 0) || delay > 3600)
        {
            return false;
        }

        row = new CollaborationRow(topics, clients, TimeSpan.FromSeconds(delay));
        return true;
    }
}
