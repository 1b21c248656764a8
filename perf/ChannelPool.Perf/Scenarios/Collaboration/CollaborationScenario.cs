using System.CommandLine;
using System.Diagnostics;
using System.Globalization;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Stats;
using Spectre.Console;
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

    /// <summary>Initializes a new instance of the <see cref="CollaborationScenario"/> class.</summary>
    /// <param name="transports">The transport options, shared with broadcast in the peer command.</param>
    public CollaborationScenario(PubSubTransportOptions transports)
    {
        _transports = transports;
        Options.Add(PositiveInt("--iterations", "Publishes per topic (the original: at least 100).", 100), (s, v) => s with { Iterations = v });
        Options.Add(
            PositiveInt("--warmup", "Iterations every topic runs before the clock, unrecorded, then a full collection in both processes; 0 for none.", 2, min: 0, max: 100, unit: "iterations"),
            (s, v) => s with { WarmupIterations = v });
        Options.Add(PositiveDouble("--delay-scale", "A factor on every D, to shorten a run (1 keeps the original's delays).", 1), (s, v) => s with { DelayScale = v });
        var rows = Options.Add(
            new Option<string>("--rows") { Description = "Which rows: original (the seven of the 2009 table), stretch, or all (default).", DefaultValueFactory = _ => "all" },
            (s, v) => s with
            {
                Rows = v switch
                {
                    "original" => CollaborationRow.Original7,
                    "stretch" => CollaborationRow.Stretch,
                    _ => [.. CollaborationRow.Original7, .. CollaborationRow.Stretch],
                },
            });
        rows.AcceptOnlyFromAmong("original", "stretch", "all");
        var row = Options.Add(
            new Option<string[]>("--row") { Description = "A custom row T,N,D (D in seconds), instead of --rows; repeatable.", AllowMultipleArgumentsPerToken = false },
            (s, v) => v.Length == 0 ? s : s with { Rows = [.. v.Select(text => TryParseRow(text, out var parsed) ? parsed : throw new ArgumentException($"Bad --row '{text}'."))] });
        row.Validators.Add(r =>
        {
            foreach (var value in r.GetValueOrDefault<string[]>() ?? [])
            {
                if (!TryParseRow(value, out _))
                {
                    r.AddError($"--row must be T,N,D: topics (1 or more), clients per topic (2 or more) and seconds (0 or more); got '{value}'.");
                }
            }
        });
        var phase = Options.Add(
            new Option<string>("--phase") { Description = "spread (default): topics publish out of step, evenly over D, as independent clients would; aligned: every topic publishes at the same instant (the worst case).", DefaultValueFactory = _ => "spread" },
            (s, v) => s with { Phase = v == "aligned" ? CollaborationPhase.Aligned : CollaborationPhase.Spread });
        phase.AcceptOnlyFromAmong("spread", "aligned");
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
        base.AddOptions(command);
        Broadcast.TwinEndpoint.AddTo(command, Broadcast.TwinEndpoint.TopicRule);
    }

    /// <summary>
    /// The suite's collaboration: the original's seven rows, three iterations, or as many as a row needs for 1,000
    /// publishes (100×5 runs 10), every D at a tenth, ours beside both SignalR peers.
    /// </summary>
    public override CollaborationSettings SuiteSettings(bool quick) =>
        (quick ? Quick : new CollaborationSettings { Rows = CollaborationRow.Original7, Iterations = 3, DelayScale = 0.1, EnoughForP99 = true }) with { Transports = _transports.All };

    public override CollaborationSettings ReadSettings(ParseResult parse, bool quick) =>
        base.ReadSettings(parse, quick) with { Transports = _transports.Read(parse) with { Twins = Broadcast.TwinEndpoint.Compared(parse, Broadcast.TwinEndpoint.TopicRule) } };

    protected override CollaborationSettings Basis(bool quick) => quick ? Quick : new();

    public override Task<IReadOnlyList<CollaborationResult>> RunAsync(PerfContext context, CollaborationSettings settings, CancellationToken cancellationToken)
    {
        // After broadcast, on fresh connections: no idle pool left to expire all at once under the first row's clock.
        context.RenewConnections();
        return settings.Transports.UseAsync(context, list => new CollaborationRun(context, settings).RunAsync(list, cancellationToken));
    }

    public override ReportSection Report(IReadOnlyList<CollaborationResult> results, CollaborationSettings settings, PerfContext context)
    {
        var section = NewSection("Collaboration: T topics × N clients, publish to receipt latency", results);
        section.Tables.Add(new ReportTable(
            "Latency (ms)",
            ["Transport", "T×N, D", "Clients", "Publishes", "Mean", "Median", "Stdev", "p99", "Max", "Lost", "Duplicated", "Original mean / median / stdev"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Transport, r.Row.Label, Num(r.Row.Clients), Num(Publishes(r)), Num(r.Latency.MeanMs, "0.0"), Num(r.Latency.MedianMs, "0.0"), Num(r.Latency.StdevMs, "0.0"),
                Num(r.Latency.P99Ms, "0.0"), Num(r.Latency.MaxMs, "0.0"), r.Limit ?? $"{r.Lost:N0} of {r.Expected:N0}", Num(r.Duplicates),
                r.Row.Original is { } o ? $"{o.MeanMs:0} / {o.MedianMs:0} / {o.StdevMs:0}" : "—"])]));
        if (results.Any(r => Broadcast.TwinEndpoint.TopicRule.Bare(r.Transport) is not null))
        {
            section.Tables.Add(new ReportTable(
                "A trivial topic rule against no rule (ms)",
                ["T×N, D", "Mean without", "Mean with", "p99 without", "p99 with", "Lost with the rule"],
                [.. results.Where(r => Broadcast.TwinEndpoint.TopicRule.Bare(r.Transport) is not null && r.Latency.Count > 0)
                    .Select(ruled => (Ruled: ruled, Bare: results.FirstOrDefault(b => b.Transport == Broadcast.TwinEndpoint.TopicRule.Bare(ruled.Transport) && b.Row == ruled.Row)))
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

/// <summary>One row of the collaboration table: T topics × N clients, publishing every D.</summary>
/// <param name="Topics">T, the number of topics (chat rooms).</param>
/// <param name="ClientsPerTopic">N, the clients subscribed to each topic.</param>
/// <param name="Delay">D, the quiet time after every client of a topic has a message, before the next publish.</param>
/// <param name="Original">The original's published figures for this row, if it is one of its seven.</param>
internal sealed record CollaborationRow(int Topics, int ClientsPerTopic, TimeSpan Delay, OriginalCollaboration? Original = null)
{
    public int Clients => Topics * ClientsPerTopic;

    public string Label => $"{Topics}×{ClientsPerTopic}, D={Delay.TotalSeconds:0.##}s";

    /// <summary>The original's seven rows (seed 002), with its mean, median and stdev in ms.</summary>
    public static IReadOnlyList<CollaborationRow> Original7 { get; } =
    [
        new(100, 5, TimeSpan.FromSeconds(1), new(91, 63, 122)),
        new(500, 2, TimeSpan.FromSeconds(15), new(4, 0, 12)),
        new(500, 3, TimeSpan.FromSeconds(15), new(108, 94, 73)),
        new(800, 3, TimeSpan.FromSeconds(15), new(2743, 1328, 3195)),
        new(1000, 2, TimeSpan.FromSeconds(5), new(496, 498, 288)),
        new(1000, 2, TimeSpan.FromSeconds(15), new(6, 0, 17)),
        new(2000, 2, TimeSpan.FromSeconds(15), new(25, 0, 99)),
    ];

    /// <summary>Rows beyond the original's, sized to push a 2-core machine: more clients, and more talk.</summary>
    public static IReadOnlyList<CollaborationRow> Stretch { get; } =
    [
        new(2000, 5, TimeSpan.FromSeconds(1)),
        new(5000, 2, TimeSpan.FromSeconds(1)),
        new(4000, 3, TimeSpan.FromSeconds(1)),
    ];
}

/// <summary>The original's published latency for one row, in ms.</summary>
internal sealed record OriginalCollaboration(double MeanMs, double MedianMs, double StdevMs);

/// <summary>The collaboration script's settings.</summary>
internal sealed record CollaborationSettings
{
    public IReadOnlyList<CollaborationRow> Rows { get; init; } = [.. CollaborationRow.Original7, .. CollaborationRow.Stretch];

    /// <summary>The publishes a row needs before its p99 is judged: with fewer, the p99 rests on a handful of slow ones.</summary>
    public const int P99Publishes = 1000;

    /// <summary>Gets how many times each topic publishes (the original: at least 100).</summary>
    public int Iterations { get; init; } = 100;

    /// <summary>
    /// Gets whether a row with few topics publishes more often than <see cref="Iterations"/>, until it has
    /// <see cref="P99Publishes"/> publishes. A publish, not a receipt, is the sample: one publish's receipts arrive together.
    /// </summary>
    public bool EnoughForP99 { get; init; }

    /// <summary>Gets how many times each topic of <paramref name="row"/> publishes.</summary>
    public int IterationsFor(CollaborationRow row) =>
        EnoughForP99 ? Math.Max(Iterations, (P99Publishes + row.Topics - 1) / row.Topics) : Iterations;

    /// <summary>
    /// Gets how many iterations every topic runs before the clock, unrecorded, followed by a full collection in both
    /// processes: each transport starts its row warm and without the connects' garbage to collect.
    /// </summary>
    public int WarmupIterations { get; init; } = 2;

    /// <summary>The longest quiet time between warm-up iterations: they warm code and sessions, which takes no waiting.</summary>
    public static readonly TimeSpan WarmupDelayCap = TimeSpan.FromSeconds(0.1);

    /// <summary>Gets a factor applied to every D, to shorten a run; 1 runs the original's delays.</summary>
    public double DelayScale { get; init; } = 1.0;

    public int ConnectConcurrency { get; init; } = 64;

    /// <summary>
    /// Gets whether the topics publish out of step (spread: topic t starts t/T of D late, as independent clients would)
    /// or all at the same instant (aligned: a synchronised burst of T publishes every iteration, the worst case).
    /// </summary>
    public CollaborationPhase Phase { get; init; } = CollaborationPhase.Spread;

    /// <summary>Gets which transports run each row, one after the other.</summary>
    public PubSubTransportChoice Transports { get; init; } = PubSubTransportChoice.Ours;

}

/// <summary>How the topics' publishes line up in time.</summary>
internal enum CollaborationPhase
{
    /// <summary>Topic t starts t/T of D late, so publishes are spread evenly over D.</summary>
    Spread,

    /// <summary>Every topic publishes at the same instant.</summary>
    Aligned,
}

/// <summary>One row's measurement.</summary>
internal sealed record CollaborationResult(
    string Transport, CollaborationRow Row, int Iterations, double DelaySeconds, LatencySummary Latency, long Expected, long Lost, long Duplicates, string? Limit);

/// <summary>
/// The original's collaboration script: T topics × N clients. In every topic at once, one client publishes and the other
/// N − 1 receive; once all have it, the topic is quiet for D, then the next client publishes. Latency is publish to
/// receipt, over every receipt of every iteration of every topic.
/// </summary>
internal sealed class CollaborationRun(PerfContext context, CollaborationSettings settings)
{
    public async Task<IReadOnlyList<CollaborationResult>> RunAsync(IReadOnlyList<IPubSubTransport> transports, CancellationToken cancellationToken)
    {
        var results = new List<CollaborationResult>();
        for (var r = 0; r < settings.Rows.Count; r++)
        {
            // Comparing a topic rule against none, every other row runs them the other way round, so whichever runs
            // second on a warmer (or busier) machine is not always the same one.
            foreach (var transport in settings.Transports.Twins.Count > 0 && r % 2 == 1 ? transports.Reverse() : transports)
            {
                results.Add(await RunRowAsync(transport, settings.Rows[r], cancellationToken));
            }
        }

        return results;
    }

    private async Task<CollaborationResult> RunRowAsync(IPubSubTransport transport, CollaborationRow row, CancellationToken cancellationToken)
    {
        var delay = row.Delay * settings.DelayScale;
        var iterations = settings.IterationsFor(row);
        var skipped = row.Clients > context.ClientCapacity
            ? $"skipped: {row.Clients:N0} clients exceed this process's open-file limit ({context.ClientCapacity:N0})"
            : transport.Name.StartsWith(PubSubTransportChoice.Floor, StringComparison.Ordinal)
                ? "skipped: the floor answers a publisher's own poll too, so it has no collaboration row; it runs in broadcast"
                : null;
        if (skipped is not null)
        {
            context.Console.MarkupLine($"  [yellow]{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: {Markup.Escape(skipped)}[/]");
            return new CollaborationResult(transport.Name, row, iterations, delay.TotalSeconds, LatencySummary.Empty, 0, 0, 0, skipped);
        }

        var topics = Enumerable.Range(0, row.Topics).Select(t => new TopicState(row.ClientsPerTopic)).ToArray();
        var latency = new LatencyRecorder();
        var members = new IPubSubClient[row.Topics][];
        var connected = 0;
        try
        {
            await context.Console.Status().StartAsync($"{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: connecting {row.Clients:N0} clients", async status =>
            {
                for (var t = 0; t < row.Topics; t++)
                {
                    members[t] = new IPubSubClient[row.ClientsPerTopic];
                }

                await Parallel.ForEachAsync(
                    Enumerable.Range(0, row.Clients),
                    new ParallelOptions { MaxDegreeOfParallelism = settings.ConnectConcurrency, CancellationToken = cancellationToken },
                    async (i, token) =>
                    {
                        var (t, n) = (i / row.ClientsPerTopic, i % row.ClientsPerTopic);
                        var topic = topics[t];
                        var client = await transport.ConnectAsync(data => topic.OnNotification(t, n, data, latency), token);
                        members[t][n] = client;
                        await client.SubscribeAsync(TopicName(t), token);
                        var done = Interlocked.Increment(ref connected);
                        if (done % 250 == 0)
                        {
                            status.Status($"{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: {done:N0} of {row.Clients:N0} clients connected");
                        }
                    });
            });

            // Before the clock, every transport alike: a few unrecorded iterations (first sends and polls of every session,
            // tier-0 code, timers), then a full collection in both processes, so the connects' garbage is not collected
            // during the measured iterations. Without them the first row's p99 was the first second's, not the transport's.
            var warmup = settings.WarmupIterations;
            if (warmup > 0)
            {
                var warmupDelay = delay < CollaborationSettings.WarmupDelayCap ? delay : CollaborationSettings.WarmupDelayCap;
                await context.Console.Status().StartAsync(
                    $"{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: {warmup} warm-up iterations",
                    async _ => await Task.WhenAll(Enumerable.Range(0, row.Topics).Select(t =>
                        RunTopicAsync(t, topics[t], members[t], 0, warmup, warmupDelay, StartOffset(t, row.Topics, warmupDelay), cancellationToken))));
                await context.SettleAsync(cancellationToken);
            }

            var warmupLost = topics.Sum(topic => topic.RecordFrom(warmup));
            if (warmupLost > 0)
            {
                context.Console.MarkupLine($"  [yellow]{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: {warmupLost:N0} notifications lost or duplicated in the warm-up[/]");
            }

            var started = Stopwatch.GetTimestamp();
            await context.Console.Status().StartAsync(
                $"{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: {iterations} iterations",
                async _ => await Task.WhenAll(Enumerable.Range(0, row.Topics).Select(t =>
                    RunTopicAsync(t, topics[t], members[t], warmup, iterations, delay, StartOffset(t, row.Topics, delay), cancellationToken))));
            var result = new CollaborationResult(
                transport.Name,
                row,
                iterations,
                delay.TotalSeconds,
                latency.Summarize(),
                (long)row.Topics * (row.ClientsPerTopic - 1) * iterations,
                topics.Sum(t => t.Lost),
                topics.Sum(t => t.Duplicates),
                null);
            context.Console.MarkupLine(
                $"  {Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: mean {result.Latency.MeanMs:0.0} ms, median {result.Latency.MedianMs:0.0} ms, p99 {result.Latency.P99Ms:0.0} ms, lost {result.Lost:N0} ({Stopwatch.GetElapsedTime(started).TotalSeconds:0} s)");
            return result;
        }
        finally
        {
            await Parallel.ForEachAsync(
                members.Where(m => m is not null).SelectMany(m => m).Where(c => c is not null),
                new ParallelOptions { MaxDegreeOfParallelism = settings.ConnectConcurrency },
                async (client, _) => await client.DisposeAsync());
        }
    }

    private TimeSpan StartOffset(int t, int topics, TimeSpan delay) =>
        settings.Phase == CollaborationPhase.Spread ? delay * t / topics : TimeSpan.Zero;

    private static async Task RunTopicAsync(int t, TopicState topic, IPubSubClient[] members, int first, int iterations, TimeSpan delay, TimeSpan startOffset, CancellationToken cancellationToken)
    {
        var topicName = TopicName(t);
        if (startOffset > TimeSpan.Zero)
        {
            await Task.Delay(startOffset, cancellationToken);
        }

        // Late by more than this and a message counts as lost: far beyond any latency worth reporting.
        var patience = TimeSpan.FromSeconds(30);
        for (var i = first; i < first + iterations; i++)
        {
            var publisher = i % members.Length;
            var arrived = topic.Begin(i);
            await members[publisher].PublishAsync(topicName, Stamp.Now(t, i).ToJson(), cancellationToken);
            if (await Task.WhenAny(arrived, Task.Delay(patience, cancellationToken)) != arrived)
            {
                topic.GiveUp();
            }

            await Task.Delay(delay, cancellationToken);
        }
    }

    private static string TopicName(int t) => "collab/" + t.ToString(CultureInfo.InvariantCulture);

    /// <summary>One topic's current iteration: who published, and how many of the others have the message.</summary>
    private sealed class TopicState(int members)
    {
        private readonly Lock _lock = new();
        private int _iteration = -1;
        private int _remaining;
        private readonly int[] _lastSeen = [.. Enumerable.Repeat(-1, members)];
        private TaskCompletionSource _arrived = new();
        private int _recordFrom = int.MaxValue; // nothing counts until RecordFrom says where the warm-up ends

        public long Lost { get; private set; }

        /// <summary>Gets how many notifications a client received twice, or after a later one.</summary>
        public long Duplicates { get; private set; }

        public Task Begin(int iteration)
        {
            using (_lock.EnterScope())
            {
                _iteration = iteration;
                _remaining = members - 1;
                _arrived = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                return _arrived.Task;
            }
        }

        /// <summary>Counts only from iteration <paramref name="iteration"/> on: those before warm up. Returns what they lost or duplicated.</summary>
        public long RecordFrom(int iteration)
        {
            using (_lock.EnterScope())
            {
                var warmup = Lost + Duplicates;
                (_recordFrom, Lost, Duplicates) = (iteration, 0, 0);
                return warmup;
            }
        }

        public void GiveUp()
        {
            using (_lock.EnterScope())
            {
                Lost += _remaining;
                _remaining = 0;
                _iteration = -1;
            }
        }

        public void OnNotification(int topic, int member, ReadOnlySpan<byte> data, LatencyRecorder latency)
        {
            var now = Stopwatch.GetTimestamp();
            if (!Stamp.TryParse(data, out var stamp) || stamp.Key != topic)
            {
                return;
            }

            TaskCompletionSource? done = null;
            using (_lock.EnterScope())
            {
                if (stamp.Burst <= _lastSeen[member])
                {
                    Duplicates++;
                    return;
                }

                _lastSeen[member] = stamp.Burst;
                if (stamp.Burst != _iteration || _remaining == 0)
                {
                    // From an iteration already given up on: counted lost there.
                    return;
                }

                if (--_remaining == 0)
                {
                    done = _arrived;
                }
            }

            if (stamp.Burst >= Volatile.Read(ref _recordFrom))
            {
                latency.Record(now - stamp.Timestamp);
            }

            done?.TrySetResult();
        }
    }
}
