using System.CommandLine;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Servers;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.PollModes;

/// <summary>
/// The <c>poll-modes</c> command: server-to-client throughput of SingleMessagePerPoll, MultipleMessagesPerPoll and a
/// raw WebSocket baseline, in binary and text. Target: MultipleMessagesPerPoll at 90% of the WebSocket or more.
/// </summary>
internal sealed class PollModesScenario : PerfScenario<PollModesSettings, IReadOnlyList<PollModesResult>>
{
    private readonly Option<double> _duration = PositiveDouble("--duration", "Seconds each cell is measured, after a warm-up.", 5);
    private readonly Option<int> _streams = PositiveInt("--streams", "Streams side by side per cell.", 4, max: 256);
    private readonly Option<int> _size = PositiveInt("--size", "Message size in bytes.", 256);
    private readonly Option<int> _rounds = PositiveInt("--rounds", "Interleaved rounds per cell; each cell reports its median.", 3, max: 100);

    /// <summary>Initializes a new instance of the <see cref="PollModesScenario"/> class.</summary>
    public PollModesScenario() => _size.Validators.Add(r =>
    {
        var value = r.GetValueOrDefault<int>();
        if (value is < FloodPayload.MinSize or > FloodPayload.MaxSize)
        {
            r.AddError($"--size must be from {FloodPayload.MinSize} to {FloodPayload.MaxSize} bytes; got {value}.");
        }
    });

    public override string Name => "poll-modes";

    public override string Description => "Server-to-client throughput of SingleMessagePerPoll, MultipleMessagesPerPoll and a raw WebSocket baseline, in binary and text.";

    public override void AddOptions(Command command)
    {
        command.Add(_duration);
        command.Add(_streams);
        command.Add(_size);
        command.Add(_rounds);
    }

    /// <summary>The suite's poll modes: 2 s per cell after 1 s of warm-up, 4 streams, the median of 3 interleaved rounds.</summary>
    public override PollModesSettings SuiteSettings(bool quick) => new()
    {
        Duration = TimeSpan.FromSeconds(quick ? 1 : 2), WarmUp = TimeSpan.FromSeconds(quick ? 0.3 : 1), Streams = quick ? 2 : 4, Rounds = quick ? 1 : 3,
    };

    public override PollModesSettings ReadSettings(ParseResult parse, bool quick) => new()
    {
        Duration = TimeSpan.FromSeconds(Pick(parse, _duration, quick, 1.0)),
        WarmUp = quick ? TimeSpan.FromSeconds(0.3) : TimeSpan.FromSeconds(1),
        Streams = Pick(parse, _streams, quick, 2),
        MessageSize = parse.GetValue(_size),
        Rounds = Pick(parse, _rounds, quick, 1),
    };

    public override Task<IReadOnlyList<PollModesResult>> RunAsync(PerfContext context, PollModesSettings settings, CancellationToken cancellationToken) =>
        new PollModesRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(IReadOnlyList<PollModesResult> results, PollModesSettings settings, PerfContext context)
    {
        var section = NewSection(
            "Poll modes: server-to-client throughput",
            $"{settings.Streams} streams side by side, each pushing {settings.MessageSize}-byte JSON messages as fast as its client takes them, measured for {settings.Duration.TotalSeconds:0.#} s after " +
            $"{settings.WarmUp.TotalSeconds:0.#} s of warm-up; each cell's figure is the median of {settings.Rounds} interleaved round(s), after one unrecorded warm-up pass over every cell. The duplex flood endpoint lets a multiple-mode response carry up to {context.ServerSettings.FloodWindow} messages (MaxPendingMessagesPerSession; the original's " +
            "measurements set it to Int32.MaxValue); a single-mode response carries one. The WebSocket baseline sends each message as one WebSocket message and awaits each send; " +
            "in text, its client checks each message is JSON in valid UTF-8 (Utf8.IsValid, Utf8JsonReader), the check our client makes on every text frame before handing its data on.",
            results);
        section.Tables.Add(new ReportTable(
            "Throughput",
            ["Transport", "Encoding", "Messages/s (median)", "Rounds (min–max)", "MB/s", "vs WebSocket"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Transport, r.Encoding, Num(r.MessagesPerSecond), $"{Num(r.RoundMessagesPerSecond.Min())}–{Num(r.RoundMessagesPerSecond.Max())}",
                Num(r.MegabytesPerSecond, "0.0"), Baseline(r, results) is { MessagesPerSecond: > 0 } ws ? Percent(r.MessagesPerSecond / ws.MessagesPerSecond) : "—"])]));
        section.Charts.Add(new Chart(
            "poll-modes-throughput",
            "Poll modes: messages per second (log scale)",
            ChartKind.GroupedBar,
            "Encoding",
            "Messages per second",
            [.. results.Select(r => new ChartPoint(r.Transport, r.Encoding, 0, Math.Max(r.MessagesPerSecond, 1)))],
            LogScaleY: true));
        foreach (var encoding in results.Select(r => r.Encoding).Distinct())
        {
            var ws = results.Single(r => r.Encoding == encoding && IsBaseline(r));
            var multiple = results.Single(r => r.Encoding == encoding && r.Transport == "MultipleMessagesPerPoll");
            var single = results.Single(r => r.Encoding == encoding && r.Transport == "SingleMessagePerPoll");
            var ratio = multiple.MessagesPerSecond / ws.MessagesPerSecond;
            section.Targets.Add(new TargetCheck(
                $"MultipleMessagesPerPoll ≥ 90% of the WebSocket baseline ({encoding})",
                $"{Percent(ratio)} ({Num(multiple.MessagesPerSecond)} vs {Num(ws.MessagesPerSecond)} msg/s)",
                ratio >= 0.9,
                ratio >= 0.9 ? null : $"{Percent(0.9 - ratio)} short of 90%"));
            section.Notes.Add($"{encoding}: MultipleMessagesPerPoll is {Num(multiple.MessagesPerSecond / Math.Max(single.MessagesPerSecond, 1))}× SingleMessagePerPoll (the original: 910×).");
        }

        var binary = results.Single(r => r.Encoding == "binary" && r.Transport == "MultipleMessagesPerPoll");
        var text = results.Single(r => r.Encoding == "text" && r.Transport == "MultipleMessagesPerPoll");
        section.Notes.Add($"MultipleMessagesPerPoll binary is {Percent(binary.MessagesPerSecond / Math.Max(text.MessagesPerSecond, 1))} of text (the original: 138%).");
        return section;
    }

    private static bool IsBaseline(PollModesResult r) => r.Transport.StartsWith("WebSocket", StringComparison.Ordinal);

    private static PollModesResult? Baseline(PollModesResult r, IReadOnlyList<PollModesResult> all) => all.FirstOrDefault(x => x.Encoding == r.Encoding && IsBaseline(x));
}
