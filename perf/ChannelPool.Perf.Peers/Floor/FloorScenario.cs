using System.CommandLine;
using System.Diagnostics;
using System.Net;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Peers.SignalR;
using ChannelPool.Perf.Reporting;
using ChannelPool.PollingDuplex;
using Spectre.Console;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Peers.Floor;

/// <summary>
/// The <c>floor</c> command: the CPU one long-poll delivery costs the server and the client, ours and SignalR long
/// polling's, as a ratio to a bare Kestrel endpoint that holds a request and answers it with the same bytes, over
/// HTTP/1.1 and HTTP/2. Target: ours at most 1.5× the floor on each side.
/// </summary>
internal sealed class FloorScenario : PerfScenario<FloorSettings, IReadOnlyList<FloorResult>>
{
    private const double Target = 1.5;

    /// <summary>Initializes a new instance of the <see cref="FloorScenario"/> class.</summary>
    public FloorScenario()
    {
        Options.Add(PositiveInt("--clients", "Clients per cell, each holding one long poll.", 500, max: 5000), (s, v) => s with { Clients = v });
        Options.Add(PositiveInt("--bursts", "Bursts (one delivery to every client) per cell and round.", 40), (s, v) => s with { Bursts = v });
        Options.Add(PositiveInt("--rounds", "Interleaved rounds per cell; each cell reports its median.", 5, max: 100), (s, v) => s with { Rounds = v });
        var cells = Options.Add(
            new Option<string[]>("--cells")
            {
                Description = $"Which cells run (a cell's ratio needs its floor among them): {string.Join(", ", FloorSettings.AllCells)}. Default: all.",
                AllowMultipleArgumentsPerToken = true,
            },
            (s, v) => s with { Cells = v.Length > 0 ? v : null });
        cells.AcceptOnlyFromAmong([.. FloorSettings.AllCells]);
    }

    public override string Name => "floor";

    public override string Description => "The CPU one long-poll delivery costs server and client, ours and SignalR long polling's, against a bare Kestrel endpoint answering with the same bytes, over HTTP/1.1 and HTTP/2.";

    /// <summary>The suite's floor: 200 clients a cell, 20 bursts, the median of 3 interleaved rounds (about a minute and a half).</summary>
    public override FloorSettings SuiteSettings(bool quick) => quick
        ? new() { Clients = 10, Bursts = 3, WarmUpBursts = 2, Rounds = 1, Batch = 2 }
        : new() { Clients = 200, Bursts = 20, WarmUpBursts = 10, Rounds = 3 };

    protected override FloorSettings Basis(bool quick) => quick ? SuiteSettings(quick) : new();

    public override Task<IReadOnlyList<FloorResult>> RunAsync(PerfContext context, FloorSettings settings, CancellationToken cancellationToken) =>
        new FloorRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(IReadOnlyList<FloorResult> results, FloorSettings settings, PerfContext context)
    {
        var section = NewSection("Floor: CPU per long-poll delivery against a bare Kestrel endpoint", results);
        section.Tables.Add(new ReportTable(
            "CPU per delivered message, against the floor",
            ["Delivery", "Protocol", "Messages a response", "Server µs/msg", "Server × floor", "Client µs/msg", "Client × floor", "Messages/s", "Polls answered a delivery"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Name, r.Protocol, Num(r.MessagesPerDelivery), Num(r.ServerMicrosPerMessage, "0.0"), Ratio(r.ServerRatio), Num(r.ClientMicrosPerMessage, "0.0"), Ratio(r.ClientRatio),
                Num(r.MessagesPerSecond), double.IsNaN(r.ResponsesPerDelivery) ? "—" : Num(r.ResponsesPerDelivery, "0.00")])]));
        section.Tables.Add(new ReportTable(
            "Rounds (server / client µs per message)",
            ["Delivery", "Protocol", "Messages a response", .. Enumerable.Range(1, results.Max(r => r.Rounds.Count)).Select(i => $"Round {i}")],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Name, r.Protocol, Num(r.MessagesPerDelivery), .. r.Rounds.Select(x => $"{Num(x.ServerMicrosPerMessage, "0.0")} / {Num(x.ClientMicrosPerMessage, "0.0")}")])]));
        foreach (var ours in results.Where(r => r.Name == "ours, multiple"))
        {
            var shape = $"multiple mode, {ours.Protocol}, {(ours.MessagesPerDelivery == 1 ? "one message a response" : $"{ours.MessagesPerDelivery} a response")}";
            foreach (var (side, ratio) in new[] { ("Server", ours.ServerRatio), ("Client", ours.ClientRatio) })
            {
                section.Targets.Add(new TargetCheck(
                    $"{side} CPU per delivery ≤ {Target:0.0}× the floor ({shape})",
                    Ratio(ratio),
                    double.IsNaN(ratio) ? null : ratio <= Target,
                    ratio <= Target || double.IsNaN(ratio) ? null : $"{Ratio(ratio / Target)} of the target"));
            }
        }

        section.Notes.Add("Every fleet stays connected for the whole run, so the idle fleets' polls (one per client per poll timeout) fall into every cell's CPU alike.");
        return section;
    }
}

/// <summary>The floor scenario's settings.</summary>
internal sealed record FloorSettings
{
    /// <summary>Gets how many clients each cell holds, each with one long poll outstanding.</summary>
    public int Clients { get; init; } = 500;

    /// <summary>Gets how many bursts (one delivery to every client) each cell runs in a round.</summary>
    public int Bursts { get; init; } = 40;

    /// <summary>Gets the bursts each cell runs once, unrecorded, before the first round, so the JIT has tiered up.</summary>
    public int WarmUpBursts { get; init; } = 20;

    /// <summary>Gets how many interleaved rounds each cell runs; each cell reports the median.</summary>
    public int Rounds { get; init; } = 5;

    /// <summary>Gets how many messages a batched delivery carries.</summary>
    public int Batch { get; init; } = 8;

    /// <summary>
    /// Gets the pause between one burst's last receipt and the next publish: longer than the endpoint's 20 ms batch
    /// window, so a multiple-mode response carries one burst, not two.
    /// </summary>
    public TimeSpan Pause { get; init; } = TimeSpan.FromMilliseconds(30);

    /// <summary>Gets the cells to run by id (see <see cref="AllCells"/>), or <see langword="null"/> for all of them.</summary>
    public IReadOnlyList<string>? Cells { get; init; }

    /// <summary>Gets every cell's id, in the order they run.</summary>
    public static IReadOnlyList<string> AllCells { get; } = ["floor", "floor-h2", "single", "multiple", "multiple-h2", "signalr", "floor-batch", "multiple-batch"];
}

/// <summary>One way of delivering, measured in every round.</summary>
/// <param name="Name">What delivers: <c>floor</c>, <c>ours, single</c>, <c>ours, multiple</c>, <c>SignalR long polling</c>.</param>
/// <param name="Protocol"><c>HTTP/1.1</c> or <c>HTTP/2</c>.</param>
/// <param name="MessagesPerDelivery">Messages one response carries.</param>
/// <param name="ServerMicrosPerMessage">The server process's CPU per delivered message, median round, in microseconds.</param>
/// <param name="ClientMicrosPerMessage">The client process's CPU per delivered message, median round.</param>
/// <param name="ServerRatio">The median of each round's server figure over the same round's floor (same protocol and batch).</param>
/// <param name="ClientRatio">The same for the client.</param>
/// <param name="MessagesPerSecond">Messages delivered per second of the round, median (pauses included).</param>
/// <param name="ResponsesPerDelivery">Our endpoint's answered polls per delivery (1 when each burst took one response); NaN for the others.</param>
/// <param name="Rounds">Each round's figures, in the order run.</param>
internal sealed record FloorResult(
    string Name,
    string Protocol,
    int MessagesPerDelivery,
    double ServerMicrosPerMessage,
    double ClientMicrosPerMessage,
    double ServerRatio,
    double ClientRatio,
    double MessagesPerSecond,
    double ResponsesPerDelivery,
    IReadOnlyList<FloorRound> Rounds);

/// <summary>One cell's round.</summary>
/// <param name="Messages">Messages delivered.</param>
/// <param name="Seconds">The round's time.</param>
/// <param name="ServerMicrosPerMessage">Server CPU per message.</param>
/// <param name="ClientMicrosPerMessage">Client CPU per message.</param>
/// <param name="Polls">Our endpoint's answered polls in the round (0 for the others).</param>
internal sealed record FloorRound(long Messages, double Seconds, double ServerMicrosPerMessage, double ClientMicrosPerMessage, long Polls);

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
        var http2Base = endpoints.Http2 ?? throw new InvalidOperationException("The floor scenario needs the servers' HTTP/2 address.");
        var http2 = context.Http2;

        var fleets = new List<Fleet>
        {
            new("floor", FloorName, Http11, new FloorTransport(context.Http, new Uri(endpoints.Http, "floor"), FloorName), Ours: false),
            new("floor-h2", FloorName, Http2, new FloorTransport(http2, new Uri(http2Base, "floor"), FloorName, ClientProtocol.Http2), Ours: false),
            new("single", "ours, single", Http11, new DuplexPubSubTransport(context.Http, endpoints.PubSub, DuplexEncoding.Binary, PollingDuplexMode.SingleMessagePerPoll), Ours: true),
            new("multiple", "ours, multiple", Http11, new DuplexPubSubTransport(context.Http, endpoints.PubSub, DuplexEncoding.Binary, PollingDuplexMode.MultipleMessagesPerPoll), Ours: true),
            new("multiple-h2", "ours, multiple", Http2, new DuplexPubSubTransport(http2, new Uri(http2Base, "pubsub"), DuplexEncoding.Binary, PollingDuplexMode.MultipleMessagesPerPoll), Ours: true),
            new("signalr", "SignalR long polling", Http11, new SignalRTransport(new Uri(endpoints.Http, "signalr"), SignalRTransportKind.LongPolling, context.Handler), Ours: false),
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
