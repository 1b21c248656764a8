using System.Diagnostics;
using System.Globalization;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Stats;
using Spectre.Console;

namespace ChannelPool.Perf.Scenarios.Collaboration;

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
            foreach (var transport in settings.CompareTopicRule && r % 2 == 1 ? transports.Reverse() : transports)
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
        if (row.Clients > context.ClientCapacity)
        {
            var limit = $"skipped: {row.Clients:N0} clients exceed this process's open-file limit ({context.ClientCapacity:N0})";
            context.Console.MarkupLine($"  [yellow]{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: {Markup.Escape(limit)}[/]");
            return new CollaborationResult(transport.Name, row, iterations, delay.TotalSeconds, LatencySummary.Empty, 0, 0, 0, limit);
        }

        if (transport is FloorTransport)
        {
            const string Floor = "skipped: the floor answers a publisher's own poll too, so it has no collaboration row; it runs in broadcast";
            context.Console.MarkupLine($"  [yellow]{Markup.Escape(transport.Name)} {Markup.Escape(row.Label)}: {Floor}[/]");
            return new CollaborationResult(transport.Name, row, iterations, delay.TotalSeconds, LatencySummary.Empty, 0, 0, 0, Floor);
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
                if (context.HasServer)
                {
                    // The redis command's duplex nodes run in this process, so the collection below covers them.
                    await context.Server.SettleAsync(cancellationToken);
                }

                Servers.PerfServer.Settle();
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
