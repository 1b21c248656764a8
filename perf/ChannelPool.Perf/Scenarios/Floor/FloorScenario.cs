using System.CommandLine;
using ChannelPool.Perf.Reporting;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Floor;

/// <summary>
/// The <c>floor</c> command: the CPU one long-poll delivery costs the server and the client, ours and SignalR long
/// polling's, as a ratio to a bare Kestrel endpoint that holds a request and answers it with the same bytes, over
/// HTTP/1.1 and HTTP/2. Target: ours at most 1.5× the floor on each side.
/// </summary>
internal sealed class FloorScenario : PerfScenario<FloorSettings, IReadOnlyList<FloorResult>>
{
    private const double Target = 1.5;
    private readonly Option<int> _clients = PositiveInt("--clients", "Clients per cell, each holding one long poll.", 500, max: 5000);
    private readonly Option<int> _bursts = PositiveInt("--bursts", "Bursts (one delivery to every client) per cell and round.", 40);
    private readonly Option<int> _rounds = PositiveInt("--rounds", "Interleaved rounds per cell; each cell reports its median.", 5, max: 100);
    private readonly Option<int> _batch = PositiveInt("--batch", "Messages a batched delivery carries.", 8, max: 64);
    private readonly Option<string[]> _cells = new("--cells")
    {
        Description = $"Which cells run (a cell's ratio needs its floor among them): {string.Join(", ", FloorSettings.AllCells)}. Default: all.",
        AllowMultipleArgumentsPerToken = true,
    };

    /// <summary>Initializes a new instance of the <see cref="FloorScenario"/> class.</summary>
    public FloorScenario() => _cells.AcceptOnlyFromAmong([.. FloorSettings.AllCells]);

    public override string Name => "floor";

    public override string Description => "The CPU one long-poll delivery costs server and client, ours and SignalR long polling's, against a bare Kestrel endpoint answering with the same bytes, over HTTP/1.1 and HTTP/2.";

    public override void AddOptions(Command command)
    {
        command.Add(_clients);
        command.Add(_bursts);
        command.Add(_rounds);
        command.Add(_batch);
        command.Add(_cells);
    }

    /// <summary>The suite's floor: 200 clients a cell, 20 bursts, the median of 3 interleaved rounds (about a minute and a half).</summary>
    public override FloorSettings SuiteSettings(bool quick) => quick
        ? new() { Clients = 10, Bursts = 3, WarmUpBursts = 2, Rounds = 1, Batch = 2 }
        : new() { Clients = 200, Bursts = 20, WarmUpBursts = 10, Rounds = 3 };

    public override FloorSettings ReadSettings(ParseResult parse, bool quick) => new()
    {
        Clients = Pick(parse, _clients, quick, 10),
        Bursts = Pick(parse, _bursts, quick, 3),
        WarmUpBursts = quick ? 2 : new FloorSettings().WarmUpBursts,
        Rounds = Pick(parse, _rounds, quick, 1),
        Batch = Pick(parse, _batch, quick, 2),
        Cells = parse.GetValue(_cells) is { Length: > 0 } cells ? cells : null,
    };

    public override Task<IReadOnlyList<FloorResult>> RunAsync(PerfContext context, FloorSettings settings, CancellationToken cancellationToken) =>
        new FloorRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(IReadOnlyList<FloorResult> results, FloorSettings settings, PerfContext context)
    {
        var section = NewSection(
            "Floor: CPU per long-poll delivery against a bare Kestrel endpoint",
            $"Each cell holds {settings.Clients:N0} clients, each with one long poll outstanding; a burst publishes once (or {settings.Batch} times in one request) " +
            $"to all of them, and the next follows {settings.Pause.TotalMilliseconds:0} ms after every client has its messages, past the 20 ms batch window. " +
            $"A round is {settings.Bursts} bursts; each figure is a process's CPU time over the round divided by the messages delivered, server and clients in " +
            $"separate processes, the median of {settings.Rounds} interleaved round(s) after an unrecorded pass of {settings.WarmUpBursts} bursts a cell. " +
            "The floor is a Kestrel endpoint that holds a GET until a publish and answers it with the binary frame(s) our endpoint would send, and whose client " +
            "reads the body and hands each notification's data on as ours does: no session, token, acknowledgement, queue, limit or telemetry. Ratios are each " +
            "round's figure over the same round's floor with the same protocol and batch, median. HTTP/2 is cleartext with prior knowledge (h2c) on loopback. " +
            "Ours is binary; SignalR is the official client with the JSON protocol.",
            results);
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
        section.Charts.Add(new Chart(
            "floor-cpu",
            "CPU per delivered message, as a multiple of the floor",
            ChartKind.GroupedBar,
            "Delivery",
            "× the floor's CPU per message",
            [.. results.Where(r => r.Name != FloorRun.FloorName && double.IsFinite(r.ServerRatio) && double.IsFinite(r.ClientRatio)).SelectMany(r => new[]
            {
                new ChartPoint("server", $"{r.Name}, {r.Protocol}{(r.MessagesPerDelivery > 1 ? $", {r.MessagesPerDelivery} a response" : string.Empty)}", 0, r.ServerRatio),
                new ChartPoint("client", $"{r.Name}, {r.Protocol}{(r.MessagesPerDelivery > 1 ? $", {r.MessagesPerDelivery} a response" : string.Empty)}", 0, r.ClientRatio),
            })]));
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
        section.Notes.Add("Ours pays for what the floor leaves out: a session lookup with a SHA-256 of its token, acknowledgements, a queue per session, and the perf server's listener on its counters, called once a poll and once a take.");
        return section;
    }
}
