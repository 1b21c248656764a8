using System.Diagnostics;
using System.Net;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Peers.SignalR;
using ChannelPool.PollingDuplex;
using Spectre.Console;

namespace ChannelPool.Perf.Scenarios.Floor;

/// <summary>
/// The cost of one long-poll delivery against its floor. Every cell holds the same number of clients, each with a poll
/// outstanding; a burst publishes once (or a batch) to all of them, the next burst follows once every client has its
/// messages and the batch window has passed, and a round counts both processes' CPU over its bursts. Cells take turns,
/// in reverse order every other round, after one unrecorded pass.
/// </summary>
internal sealed class FloorRun(PerfContext context, FloorSettings settings)
{
    public const string FloorName = "floor";
    public const string Http11 = "HTTP/1.1";
    public const string Http2 = "HTTP/2";
    private static readonly TimeSpan BurstTimeout = TimeSpan.FromSeconds(60);
    private int _key;

    public async Task<IReadOnlyList<FloorResult>> RunAsync(CancellationToken cancellationToken)
    {
        var endpoints = context.Server.Endpoints;
        var http2Base = endpoints.Http2 ?? throw new InvalidOperationException("The floor scenario needs the servers' HTTP/2 address; a remote server gives none.");
        var http2 = context.Http2;

        var fleets = new List<Fleet>
        {
            new("floor", FloorName, Http11, new FloorTransport(context.Http, endpoints.Floor, FloorName), Ours: false),
            new("floor-h2", FloorName, Http2, new FloorTransport(http2, new Uri(http2Base, "floor"), FloorName, ClientProtocol.Http2), Ours: false),
            new("single", "ours, single", Http11, new DuplexPubSubTransport(context.Http, endpoints.PubSub, DuplexEncoding.Binary, PollingDuplexMode.SingleMessagePerPoll), Ours: true),
            new("multiple", "ours, multiple", Http11, new DuplexPubSubTransport(context.Http, endpoints.PubSub, DuplexEncoding.Binary, PollingDuplexMode.MultipleMessagesPerPoll), Ours: true),
            new("multiple-h2", "ours, multiple", Http2, new DuplexPubSubTransport(http2, new Uri(http2Base, "pubsub"), DuplexEncoding.Binary, PollingDuplexMode.MultipleMessagesPerPoll), Ours: true),
            new("signalr", "SignalR long polling", Http11, new SignalRTransport(endpoints.SignalR, SignalRTransportKind.LongPolling, context.Handler), Ours: false),
        };
        Cell[] all =
        [
            .. fleets.Select(f => new Cell(f, 1)),
            new(fleets[0], settings.Batch),
            new(fleets[3], settings.Batch),
        ];
        var cells = all.Where(c => settings.Cells is null || settings.Cells.Contains(c.Id)).ToArray();
        fleets = [.. fleets.Where(f => cells.Any(c => c.Fleet == f))];

        try
        {
            foreach (var fleet in fleets)
            {
                await context.Console.Status().StartAsync($"floor: connecting {settings.Clients:N0} clients of {Markup.Escape(fleet.Label)}", _ => fleet.ConnectAsync(settings.Clients, cancellationToken));
            }

            foreach (var cell in cells)
            {
                await context.Console.Status().StartAsync($"floor: warming up {Markup.Escape(cell.Label)}", _ => BurstsAsync(cell, settings.WarmUpBursts, cancellationToken));
            }

            var rounds = cells.ToDictionary(c => c, _ => new List<FloorRound>());
            for (var round = 1; round <= settings.Rounds; round++)
            {
                foreach (var cell in round % 2 == 1 ? cells : cells.Reverse())
                {
                    var measured = await context.Console.Status().StartAsync($"floor round {round}/{settings.Rounds}: {Markup.Escape(cell.Label)}", _ => MeasureAsync(cell, cancellationToken));
                    context.Console.MarkupLine(
                        $"  round {round}: {Markup.Escape(cell.Label)}: server {measured.ServerMicrosPerMessage:0.0} µs, client {measured.ClientMicrosPerMessage:0.0} µs per message, {measured.Messages / measured.Seconds:N0} msg/s");
                    rounds[cell].Add(measured);
                }
            }

            return [.. cells.Select(cell => Summarize(cell, rounds[cell], cells.FirstOrDefault(c => c.Fleet.Name == FloorName && c.Fleet.Protocol == cell.Fleet.Protocol && c.Batch == cell.Batch) is { } floor ? rounds[floor] : null))];
        }
        finally
        {
            foreach (var fleet in fleets)
            {
                await fleet.DisposeAsync();
            }
        }
    }

    private static FloorResult Summarize(Cell cell, List<FloorRound> rounds, List<FloorRound>? floor)
    {
        var serverRatios = rounds.Select((r, i) => r.ServerMicrosPerMessage / (floor?[i].ServerMicrosPerMessage ?? double.NaN));
        var clientRatios = rounds.Select((r, i) => r.ClientMicrosPerMessage / (floor?[i].ClientMicrosPerMessage ?? double.NaN));
        var deliveries = rounds.Sum(r => r.Messages) / (double)cell.Batch;
        return new FloorResult(
            cell.Fleet.Name,
            cell.Fleet.Protocol,
            cell.Batch,
            Median(rounds.Select(r => r.ServerMicrosPerMessage)),
            Median(rounds.Select(r => r.ClientMicrosPerMessage)),
            Median(serverRatios),
            Median(clientRatios),
            Median(rounds.Select(r => r.Messages / r.Seconds)),
            cell.Fleet.Ours ? rounds.Sum(r => r.Polls) / deliveries : double.NaN,
            rounds);
    }

    private static double Median(IEnumerable<double> values)
    {
        var sorted = values.Order().ToArray();
        return sorted.Length == 0 ? double.NaN : sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[(sorted.Length / 2) - 1] + sorted[sorted.Length / 2]) / 2;
    }

    private async Task<FloorRound> MeasureAsync(Cell cell, CancellationToken cancellationToken)
    {
        // Neither side carries the last cell's garbage into this one's round.
        await context.Server.SettleAsync(cancellationToken);
        GC.Collect(GC.MaxGeneration, GCCollectionMode.Forced, blocking: true, compacting: true);
        GC.WaitForPendingFinalizers();
        await Task.Delay(settings.Pause, cancellationToken);

        var serverBefore = await context.Server.GetStatsAsync(cancellationToken);
        var clientBefore = ProcessCpuSeconds();
        var started = Stopwatch.GetTimestamp();
        var messages = await BurstsAsync(cell, settings.Bursts, cancellationToken);
        var seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
        var clientCpu = ProcessCpuSeconds() - clientBefore;
        var serverAfter = await context.Server.GetStatsAsync(cancellationToken);
        return new FloorRound(
            messages,
            seconds,
            serverAfter.IsKnown ? (serverAfter.CpuSeconds - serverBefore.CpuSeconds) * 1e6 / messages : double.NaN,
            clientCpu * 1e6 / messages,
            cell.Fleet.Ours ? serverAfter.DuplexCounter("pollingduplex.polls") - serverBefore.DuplexCounter("pollingduplex.polls") : 0);
    }

    /// <summary>Runs <paramref name="bursts"/> bursts on the cell's fleet and returns the messages delivered.</summary>
    private async Task<long> BurstsAsync(Cell cell, int bursts, CancellationToken cancellationToken)
    {
        var key = Interlocked.Increment(ref _key);
        var expected = (long)settings.Clients * cell.Batch;
        var counts = new long[bursts + 1];
        var done = Enumerable.Range(0, bursts + 1).Select(_ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).ToArray();
        cell.Fleet.OnNotification = data =>
        {
            if (Stamp.TryParse(data, out var stamp) && stamp.Key == key && stamp.Burst is > 0 && stamp.Burst <= bursts && Interlocked.Increment(ref counts[stamp.Burst]) == expected)
            {
                done[stamp.Burst].TrySetResult();
            }
        };

        for (var b = 1; b <= bursts; b++)
        {
            var stamp = Stamp.Now(key, b).ToJson();
            await cell.Fleet.Publisher!.PublishAsync(cell.Fleet.Topic, [.. Enumerable.Repeat<ReadOnlyMemory<byte>>(stamp, cell.Batch)], cancellationToken);
            if (await Task.WhenAny(done[b].Task, Task.Delay(BurstTimeout, cancellationToken)) != done[b].Task)
            {
                throw new TimeoutException($"floor: {cell.Label}, burst {b}: {Interlocked.Read(ref counts[b]):N0} of {expected:N0} messages arrived in {BurstTimeout.TotalSeconds:0} s.");
            }

            // Past the batch window before the next publish, so a response carries one burst.
            await Task.Delay(settings.Pause, cancellationToken);
        }

        cell.Fleet.OnNotification = null;
        return expected * bursts;
    }

    /// <summary>This process's CPU time from getrusage, to the microsecond (Process.TotalProcessorTime counts 10 ms ticks).</summary>
    private static double ProcessCpuSeconds() => Environment.CpuUsage.TotalTime.TotalSeconds;

    /// <summary>One transport's clients on one topic of their own, with a publisher, connected for the whole run.</summary>
    private sealed record Fleet(string Id, string Name, string Protocol, IPubSubTransport Transport, bool Ours) : IAsyncDisposable
    {
        private ClientFleet? _clients;

        public string Label => $"{Name}, {Protocol}";

        public string Topic => $"floor-{Name}-{Protocol}".Replace(' ', '-').Replace(',', '-').Replace('/', '-');

        public IPubSubClient? Publisher { get; private set; }

        public NotificationHandler? OnNotification { get; set; }

        public async Task ConnectAsync(int clients, CancellationToken cancellationToken)
        {
            _clients = new ClientFleet(Transport, Topic, connectConcurrency: 32) { OnNotification = (_, data) => OnNotification?.Invoke(data) };
            await _clients.ResizeAsync(clients, null, cancellationToken);
            Publisher = await Transport.ConnectAsync(static _ => { }, cancellationToken);
        }

        public async ValueTask DisposeAsync()
        {
            if (Publisher is not null)
            {
                await Publisher.DisposeAsync();
            }

            if (_clients is not null)
            {
                await _clients.DisposeAsync();
            }

            await Transport.DisposeAsync();
        }
    }

    /// <summary>A fleet, delivering one message a burst or a batch.</summary>
    private sealed record Cell(Fleet Fleet, int Batch)
    {
        public string Label => Batch == 1 ? Fleet.Label : $"{Fleet.Label}, {Batch} a response";

        public string Id => Batch == 1 ? Fleet.Id : $"{Fleet.Id}-batch";
    }
}
