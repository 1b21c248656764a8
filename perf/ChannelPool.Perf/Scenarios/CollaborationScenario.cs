using System.Diagnostics;
using System.Globalization;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Stats;
using Spectre.Console;

namespace ChannelPool.Perf.Scenarios;

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

    /// <summary>Gets how many times each topic publishes (the original: at least 100).</summary>
    public int Iterations { get; init; } = 100;

    /// <summary>Gets a factor applied to every D, to shorten a run; 1 runs the original's delays.</summary>
    public double DelayScale { get; init; } = 1.0;

    public int ConnectConcurrency { get; init; } = 64;

    /// <summary>
    /// Gets whether the topics publish out of step (spread: topic t starts t/T of D late, as independent clients would)
    /// or all at the same instant (aligned: a synchronised burst of T publishes every iteration, the worst case).
    /// </summary>
    public CollaborationPhase Phase { get; init; } = CollaborationPhase.Spread;
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
internal sealed class CollaborationScenario(PerfContext context, CollaborationSettings settings)
{
    public async Task<IReadOnlyList<CollaborationResult>> RunAsync(IReadOnlyList<IPubSubTransport> transports, CancellationToken cancellationToken)
    {
        var results = new List<CollaborationResult>();
        foreach (var row in settings.Rows)
        {
            foreach (var transport in transports)
            {
                results.Add(await RunRowAsync(transport, row, cancellationToken));
            }
        }

        return results;
    }

    public static ReportSection Describe(IReadOnlyList<CollaborationResult> results, CollaborationSettings settings)
    {
        var section = new ReportSection(
            "collaboration",
            "Collaboration: T topics × N clients, publish to receipt latency",
            (settings.Phase == CollaborationPhase.Spread
                ? "In every topic, one client publishes and the other N − 1 receive; then the topic is quiet for D. The topics run out of step, as independent clients would: topic t starts t/T of D late, so the T topics' publishes are spread evenly over D. "
                : "In every topic at the same instant, one client publishes and the other N − 1 receive; then the topic is quiet for D. The topics run in step, so every iteration is a synchronised burst of T publishes: the worst case. ") +
            $"{settings.Iterations} iterations per topic" +
            (settings.DelayScale == 1.0 ? "." : $"; every D is scaled by {settings.DelayScale:0.###} to shorten the run (shorter quiet time means more load, not less)."))
        {
            Results = results,
        };
        section.Tables.Add(new ReportTable(
            "Latency (ms)",
            ["Transport", "T×N, D", "Clients", "Mean", "Median", "Stdev", "p99", "Max", "Lost", "Duplicated", "Original mean / median / stdev"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Transport, r.Row.Label, Num(r.Row.Clients, "N0"), Num(r.Latency.MeanMs), Num(r.Latency.MedianMs), Num(r.Latency.StdevMs), Num(r.Latency.P99Ms), Num(r.Latency.MaxMs),
                r.Limit ?? $"{r.Lost:N0} of {r.Expected:N0}", Num(r.Duplicates, "N0"),
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
        AddTargets(section, results);
        return section;
    }

    private static void AddTargets(ReportSection section, IReadOnlyList<CollaborationResult> results)
    {
        foreach (var ours in results.Where(r => r.Transport.StartsWith("polling-duplex", StringComparison.Ordinal) && r.Latency.Count > 0))
        {
            if (ours.Row.Original is not null)
            {
                var mean = ours.Latency.MeanMs;
                var p99 = ours.Latency.P99Ms;
                section.Targets.Add(new TargetCheck(
                    $"Collaboration {ours.Row.Label}: mean ≤ 10 ms and p99 ≤ 50 ms ({ours.Transport})",
                    $"mean {mean:0.0} ms, p99 {p99:0.0} ms (original mean {ours.Row.Original.MeanMs:0} ms)",
                    mean <= 10 && p99 <= 50,
                    mean <= 10 && p99 <= 50 ? null : $"mean {Over(mean, 10)}, p99 {Over(p99, 50)}"));
            }

            if (results.FirstOrDefault(r => r.Transport == "signalr-longpolling" && r.Row == ours.Row && r.Latency.Count > 0) is { } peer)
            {
                var ratio = peer.Latency.P99Ms / Math.Max(ours.Latency.P99Ms, 0.001);
                section.Targets.Add(new TargetCheck(
                    $"Collaboration {ours.Row.Label}: p99 ≥ 2× better than SignalR long polling",
                    $"{ratio:0.00}× ({ours.Latency.P99Ms:0.0} vs {peer.Latency.P99Ms:0.0} ms)",
                    ratio >= 2,
                    ratio >= 2 ? null : $"{ratio:0.00}× of the 2× asked"));
            }
        }
    }

    private static string Over(double value, double limit) =>
        value <= limit ? "within" : $"{value - limit:0.0} ms over";

    private async Task<CollaborationResult> RunRowAsync(IPubSubTransport transport, CollaborationRow row, CancellationToken cancellationToken)
    {
        var delay = row.Delay * settings.DelayScale;
        if (row.Clients > context.ClientCapacity)
        {
            var limit = $"skipped: {row.Clients:N0} clients exceed this process's open-file limit ({context.ClientCapacity:N0})";
            context.Console.MarkupLine($"  [yellow]{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: {Markup.Escape(limit)}[/]");
            return new CollaborationResult(transport.Name, row, settings.Iterations, delay.TotalSeconds, LatencySummary.Empty, 0, 0, 0, limit);
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

            var started = Stopwatch.GetTimestamp();
            await context.Console.Status().StartAsync(
                $"{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: {settings.Iterations} iterations",
                async _ => await Task.WhenAll(Enumerable.Range(0, row.Topics).Select(t => RunTopicAsync(t, topics[t], members[t], delay, StartOffset(t, row.Topics, delay), cancellationToken))));
            var result = new CollaborationResult(
                transport.Name,
                row,
                settings.Iterations,
                delay.TotalSeconds,
                latency.Summarize(),
                (long)row.Topics * (row.ClientsPerTopic - 1) * settings.Iterations,
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

    private async Task RunTopicAsync(int t, TopicState topic, IPubSubClient[] members, TimeSpan delay, TimeSpan startOffset, CancellationToken cancellationToken)
    {
        var topicName = TopicName(t);
        if (startOffset > TimeSpan.Zero)
        {
            await Task.Delay(startOffset, cancellationToken);
        }

        // Late by more than this and a message counts as lost: far beyond any latency worth reporting.
        var patience = TimeSpan.FromSeconds(30);
        for (var i = 0; i < settings.Iterations; i++)
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

    private static string Num(double value, string format = "0.0") => value.ToString(format, CultureInfo.InvariantCulture);

    /// <summary>One topic's current iteration: who published, and how many of the others have the message.</summary>
    private sealed class TopicState(int members)
    {
        private readonly Lock _lock = new();
        private int _iteration = -1;
        private int _remaining;
        private readonly int[] _lastSeen = [.. Enumerable.Repeat(-1, members)];
        private TaskCompletionSource _arrived = new();

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

            latency.Record(now - stamp.Timestamp);
            done?.TrySetResult();
        }
    }
}
