using System.Diagnostics;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Servers;
using ChannelPool.Perf.Stats;
using Spectre.Console;

namespace ChannelPool.Perf.Scenarios.Broadcast;

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
        if (settings.SideBySide is { } sideBySide)
        {
            return await SideBySideAsync(transports, sideBySide, cancellationToken);
        }

        var results = new List<BroadcastResult>();
        foreach (var transport in transports)
        {
            foreach (var period in settings.Periods)
            {
                results.Add(await SearchAsync(transport, period, cancellationToken));
            }
        }

        if (settings.CompareTopicRule)
        {
            await CompareTopicRuleAsync(transports, results, cancellationToken);
        }

        return results;
    }

    /// <summary>
    /// Each search ran on its own, minutes apart, so on a shared machine their M differ by the load as much as by the rule.
    /// Here both sides run K-burst probes at the same M, alternating (a b, b a, ...) with both fleets connected throughout,
    /// so drift falls on both alike; the server's CPU per delivery is what the rule would cost capacity.
    /// </summary>
    private async Task CompareTopicRuleAsync(IReadOnlyList<IPubSubTransport> transports, List<BroadcastResult> results, CancellationToken cancellationToken)
    {
        foreach (var ruled in transports.Where(t => TopicRuleEndpoint.WithoutRule(t.Name) is not null))
        {
            if (transports.FirstOrDefault(t => t.Name == TopicRuleEndpoint.WithoutRule(ruled.Name)) is not { } bare)
            {
                continue;
            }

            foreach (var period in settings.Periods)
            {
                var pair = results.Where(r => r.PeriodSeconds == period.TotalSeconds && (r.Transport == bare.Name || r.Transport == ruled.Name)).ToList();
                var clients = Math.Min(pair.Select(r => r.LargestClients).Where(m => m > 0).DefaultIfEmpty(0).Min(), context.CapacityFor(bare.Protocol) / 2);
                if (clients == 0)
                {
                    continue;
                }

                context.Console.MarkupLine($"  topic rule against none: {settings.CompareRounds} alternating rounds of K = {settings.Bursts} at M = {clients:N0}, P = {period.TotalSeconds:0.#} s");
                var sides = new List<(IPubSubTransport Transport, ClientFleet Fleet, IPubSubClient Publisher, BurstRun Run, List<BroadcastProbe> Probes)>();
                try
                {
                    foreach (var transport in new[] { bare, ruled })
                    {
                        var fleet = new ClientFleet(transport, Topic, settings.ConnectConcurrency);
                        sides.Add((transport, fleet, await transport.ConnectAsync(static _ => { }, cancellationToken), new BurstRun(fleet), []));
                    }

                    for (var round = 0; round < settings.CompareRounds; round++)
                    {
                        foreach (var side in round % 2 == 0 ? sides : Enumerable.Reverse(sides))
                        {
                            side.Probes.Add(await ProbeAsync(side.Run, side.Fleet, side.Publisher, side.Transport, clients, period, settings.Bursts, cancellationToken));
                        }
                    }
                }
                finally
                {
                    foreach (var side in sides)
                    {
                        await side.Publisher.DisposeAsync();
                        await side.Fleet.DisposeAsync();
                    }
                }

                foreach (var side in sides)
                {
                    var index = results.FindIndex(r => r.Transport == side.Transport.Name && r.PeriodSeconds == period.TotalSeconds);
                    results[index] = results[index] with { Alternating = side.Probes };
                }
            }
        }
    }

    /// <summary>
    /// Every transport's fleet at the same M, connected throughout; K-burst probes in turn, the order reversed every other
    /// round, so load from elsewhere falls on each alike. The probes go to <see cref="BroadcastResult.Alternating"/>.
    /// </summary>
    private async Task<IReadOnlyList<BroadcastResult>> SideBySideAsync(IReadOnlyList<IPubSubTransport> transports, int clients, CancellationToken cancellationToken)
    {
        var results = new List<BroadcastResult>();
        foreach (var period in settings.Periods)
        {
            var sides = new List<(IPubSubTransport Transport, ClientFleet Fleet, IPubSubClient Publisher, BurstRun Run, List<BroadcastProbe> Probes, int Clients)>();
            try
            {
                foreach (var transport in transports)
                {
                    var fleet = new ClientFleet(transport, Topic, settings.ConnectConcurrency);
                    sides.Add((transport, fleet, await transport.ConnectAsync(static _ => { }, cancellationToken), new BurstRun(fleet), [], Math.Min(clients, context.CapacityFor(transport.Protocol))));
                }

                context.Console.MarkupLine($"  side by side: an unrecorded round, then {settings.CompareRounds} alternating rounds of K = {settings.Bursts} at M = {clients:N0}, P = {period.TotalSeconds:0.#} s");
                for (var round = -1; round < settings.CompareRounds; round++)
                {
                    foreach (var side in round % 2 == 0 ? sides : Enumerable.Reverse(sides))
                    {
                        // Round -1 warms every fleet's code and connections, as the suite's other scenarios do, and is not kept.
                        var probe = await ProbeAsync(side.Run, side.Fleet, side.Publisher, side.Transport, side.Clients, period, settings.Bursts, cancellationToken);
                        if (round >= 0)
                        {
                            side.Probes.Add(probe);
                        }
                    }
                }
            }
            finally
            {
                foreach (var side in sides)
                {
                    await side.Publisher.DisposeAsync();
                    await side.Fleet.DisposeAsync();
                }
            }

            results.AddRange(sides.Select(side => new BroadcastResult(
                side.Transport.Name,
                side.Transport.Protocol.Label(),
                period.TotalSeconds,
                settings.Bursts,
                side.Probes.All(p => p.Passed) ? side.Clients : 0,
                false,
                side.Clients < clients ? $"side by side at {side.Clients:N0}, the open-file cap" : null,
                []) { Alternating = side.Probes }));
        }

        return results;
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
        var clientBefore = ProcessCpuSeconds();
        var allocatedBefore = GC.GetTotalAllocatedBytes(precise: false);
        await context.Console.Status().StartAsync(
            $"{Markup.Escape(transport.Name)}: {clients:N0} clients, a burst every {period.TotalSeconds:0.#} s",
            async status => probe = await run.RunAsync(publisher, clients, period, bursts, b => status.Status(
                $"{Markup.Escape(transport.Name)}: {clients:N0} clients, P = {period.TotalSeconds:0.#} s, burst {b} of {bursts}"), cancellationToken));
        var clientCpu = ProcessCpuSeconds() - clientBefore;
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

    private static double ProcessCpuSeconds()
    {
        using var process = Process.GetCurrentProcess();
        return process.TotalProcessorTime.TotalSeconds;
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
