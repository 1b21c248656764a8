using System.CommandLine;
using System.Diagnostics;
using System.Net.WebSockets;
using System.Text.Json;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Servers;
using ChannelPool.PollingDuplex;
using ChannelPool.PollingDuplex.Client;
using Spectre.Console;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.PollModes;

/// <summary>
/// The <c>poll-modes</c> command: server-to-client throughput of SingleMessagePerPoll, MultipleMessagesPerPoll and a
/// raw WebSocket baseline, in binary and text. Target: MultipleMessagesPerPoll at 90% of the WebSocket or more.
/// </summary>
internal sealed class PollModesScenario : PerfScenario<PollModesSettings, IReadOnlyList<PollModesResult>>
{
    public PollModesScenario()
    {
        Options.Add(PositiveDouble("--duration", "Seconds each cell is measured, after a warm-up.", 5), (s, v) => s with { Duration = TimeSpan.FromSeconds(v) });
        Options.Add(PositiveInt("--rounds", "Interleaved rounds per cell; each cell reports its median.", 3, max: 100), (s, v) => s with { Rounds = v });
    }

    public override string Name => "poll-modes";

    public override string Description => "Server-to-client throughput of SingleMessagePerPoll, MultipleMessagesPerPoll and a raw WebSocket baseline, in binary and text.";

    /// <summary>The suite's poll modes: 2 s per cell after 1 s of warm-up, 4 streams, the median of 3 interleaved rounds.</summary>
    public override PollModesSettings SuiteSettings(bool quick) => new()
    {
        Duration = TimeSpan.FromSeconds(quick ? 1 : 2), WarmUp = TimeSpan.FromSeconds(quick ? 0.3 : 1), Streams = quick ? 2 : 4, Rounds = quick ? 1 : 3,
    };

    protected override PollModesSettings Basis(bool quick) => quick ? SuiteSettings(quick) : new();

    public override Task<IReadOnlyList<PollModesResult>> RunAsync(PerfContext context, PollModesSettings settings, CancellationToken cancellationToken) =>
        new PollModesRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(IReadOnlyList<PollModesResult> results, PollModesSettings settings, PerfContext context)
    {
        var section = NewSection("Poll modes: server-to-client throughput", results);
        section.Tables.Add(new ReportTable(
            "Throughput",
            ["Transport", "Encoding", "Messages/s (median)", "Rounds (min–max)", "MB/s", "vs WebSocket"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Transport, r.Encoding, Num(r.MessagesPerSecond), $"{Num(r.RoundMessagesPerSecond.Min())}–{Num(r.RoundMessagesPerSecond.Max())}",
                Num(r.MegabytesPerSecond, "0.0"), Baseline(r, results) is { MessagesPerSecond: > 0 } ws ? Percent(r.MessagesPerSecond / ws.MessagesPerSecond) : "—"])]));
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

/// <summary>The poll-modes settings.</summary>
internal sealed record PollModesSettings
{
    /// <summary>Gets how long each cell is measured, after its warm-up.</summary>
    public TimeSpan Duration { get; init; } = TimeSpan.FromSeconds(5);

    public TimeSpan WarmUp { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>Gets how many streams run side by side in each cell (sessions or sockets), to use every core.</summary>
    public int Streams { get; init; } = 4;

    /// <summary>Gets each message's size in bytes.</summary>
    public int MessageSize { get; init; } = 256;

    /// <summary>
    /// Gets how many times every cell is measured, in turn, after one unrecorded warm-up pass over all of them; each cell
    /// reports its median round. Interleaving rounds spreads the noise of a shared machine over every cell alike.
    /// </summary>
    public int Rounds { get; init; } = 3;
}

/// <summary>One cell: a way of pushing messages, in one encoding.</summary>
/// <param name="Transport">The way of pushing.</param>
/// <param name="Encoding">binary or text.</param>
/// <param name="Streams">Streams side by side.</param>
/// <param name="MessageSize">Bytes per message.</param>
/// <param name="Seconds">The median round's measured time.</param>
/// <param name="Messages">The median round's message count.</param>
/// <param name="MessagesPerSecond">The median round's rate.</param>
/// <param name="MegabytesPerSecond">The median round's payload rate.</param>
/// <param name="RoundMessagesPerSecond">Every round's rate, in the order run.</param>
internal sealed record PollModesResult(
    string Transport, string Encoding, int Streams, int MessageSize, double Seconds, long Messages, double MessagesPerSecond, double MegabytesPerSecond, IReadOnlyList<double> RoundMessagesPerSecond);

/// <summary>
/// Server-to-client throughput: the server sends fixed messages as fast as each client takes them, over
/// SingleMessagePerPoll, MultipleMessagesPerPoll and a raw ASP.NET Core WebSocket, in binary and text.
/// </summary>
internal sealed class PollModesRun(PerfContext context, PollModesSettings settings)
{
    private static readonly TimeSpan SetupTimeout = TimeSpan.FromSeconds(30);
    private static readonly DuplexEncoding[] Encodings = [DuplexEncoding.Binary, DuplexEncoding.Text];
    private static readonly string[] Transports = ["WebSocket (baseline)", "MultipleMessagesPerPoll", "SingleMessagePerPoll"];

    public async Task<IReadOnlyList<PollModesResult>> RunAsync(CancellationToken cancellationToken)
    {
        var cells = (from encoding in Encodings from transport in Transports select (Transport: transport, Encoding: encoding)).ToArray();

        // One unrecorded pass first, so that the JIT's tiering and the connection pools settle before anything counts.
        foreach (var cell in cells)
        {
            await context.Console.Status().StartAsync($"poll-modes: warming up {cell.Transport}, {Name(cell.Encoding)}", _ => MeasureAsync(cell.Transport, cell.Encoding, settings.WarmUp, TimeSpan.Zero, cancellationToken));
        }

        var rounds = cells.ToDictionary(c => c, _ => new List<PollModesResult>());
        for (var round = 1; round <= settings.Rounds; round++)
        {
            foreach (var cell in cells)
            {
                var result = await context.Console.Status().StartAsync(
                    $"poll-modes round {round}/{settings.Rounds}: {cell.Transport}, {Name(cell.Encoding)}",
                    _ => MeasureAsync(cell.Transport, cell.Encoding, settings.WarmUp, settings.Duration, cancellationToken));
                context.Console.MarkupLine($"  round {round}: {Markup.Escape(result.Transport)} {result.Encoding}: {result.MessagesPerSecond:N0} msg/s, {result.MegabytesPerSecond:0.0} MB/s");
                rounds[cell].Add(result);
            }
        }

        return [.. cells.Select(cell =>
        {
            var all = rounds[cell];
            var median = all.OrderBy(r => r.MessagesPerSecond).ElementAt(all.Count / 2);
            return median with { RoundMessagesPerSecond = [.. all.Select(r => r.MessagesPerSecond)] };
        })];
    }

    private static string Name(DuplexEncoding encoding) => encoding == DuplexEncoding.Binary ? "binary" : "text";

    private Task<PollModesResult> MeasureAsync(string transport, DuplexEncoding encoding, TimeSpan warmUp, TimeSpan duration, CancellationToken cancellationToken) => transport switch
    {
        "WebSocket (baseline)" => MeasureAsync(transport, encoding, warmUp, duration, WebSocketStreamAsync, cancellationToken),
        "MultipleMessagesPerPoll" => MeasureAsync(transport, encoding, warmUp, duration, (e, count, token) => DuplexStreamAsync(PollingDuplexMode.MultipleMessagesPerPoll, e, count, token), cancellationToken),
        _ => MeasureAsync(transport, encoding, warmUp, duration, (e, count, token) => DuplexStreamAsync(PollingDuplexMode.SingleMessagePerPoll, e, count, token), cancellationToken),
    };

    private async Task<PollModesResult> MeasureAsync(
        string transport, DuplexEncoding encoding, TimeSpan warmUp, TimeSpan duration, Func<DuplexEncoding, Counter, CancellationToken, Task> stream, CancellationToken cancellationToken)
    {
        var counter = new Counter(settings.Streams);
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var setup = Stopwatch.GetTimestamp();
        var streams = Enumerable.Range(0, settings.Streams).Select(_ => Task.Run(() => stream(encoding, counter, stop.Token), CancellationToken.None)).ToArray();

        // The clock starts once every stream is connected: setting up is not part of the measurement.
        var ready = await Task.WhenAny(counter.AllReady, Task.WhenAll(streams), Task.Delay(SetupTimeout, cancellationToken));
        if (ready != counter.AllReady)
        {
            await stop.CancelAsync();
            await Task.WhenAll(streams).WaitAsync(SetupTimeout, CancellationToken.None);
            throw new TimeoutException($"poll-modes {transport} {Name(encoding)}: only {counter.ReadyStreams} of {settings.Streams} streams connected within {SetupTimeout.TotalSeconds:0} s.");
        }

        if (Stopwatch.GetElapsedTime(setup) is { TotalSeconds: > 1 } slow)
        {
            context.Console.MarkupLine($"  [yellow]{Markup.Escape(transport)} {Name(encoding)}: connecting {settings.Streams} streams took {slow.TotalSeconds:0.0} s[/]");
        }

        await Task.Delay(warmUp, cancellationToken);
        var before = counter.Value;
        var started = Stopwatch.GetTimestamp();
        await Task.Delay(duration, cancellationToken);
        var messages = counter.Value - before;
        var seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
        await stop.CancelAsync();
        await Task.WhenAll(streams);
        var perSecond = seconds > 0 ? messages / seconds : 0;
        return new PollModesResult(transport, Name(encoding), settings.Streams, settings.MessageSize, seconds, messages, perSecond, perSecond * settings.MessageSize / 1_000_000, [perSecond]);
    }

    private async Task DuplexStreamAsync(PollingDuplexMode mode, DuplexEncoding encoding, Counter counter, CancellationToken cancellationToken)
    {
        var client = new PollingDuplexClient(context.Http, context.Server.Endpoints.Flood, new PollingDuplexClientOptions { Mode = mode, Encoding = encoding, MaxRetryAttempts = 2 });
        await using var session = await client.OpenSessionAsync(cancellationToken);
        await session.SendAsync(DuplexMessage.FromJsonUtf8(JsonSerializer.SerializeToUtf8Bytes(new { size = settings.MessageSize })), cancellationToken);
        counter.StreamReady();
        try
        {
            await foreach (var delivery in session.ReadAllAsync(cancellationToken))
            {
                if (delivery.Message is { } message && message.Payload.Length == settings.MessageSize)
                {
                    counter.Add(1);
                }
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
        }
    }

    private async Task WebSocketStreamAsync(DuplexEncoding encoding, Counter counter, CancellationToken cancellationToken)
    {
        using var socket = new ClientWebSocket();
        using var invoker = new HttpMessageInvoker(context.Handler, disposeHandler: false);
        var uri = new Uri($"{context.Server.Endpoints.WebSocketFlood}?size={settings.MessageSize}&type={Name(encoding)}");
        await socket.ConnectAsync(uri, invoker, cancellationToken);
        counter.StreamReady();
        var buffer = new byte[Math.Max(4096, settings.MessageSize)];
        var received = 0;
        try
        {
            while (!cancellationToken.IsCancellationRequested)
            {
                var result = await socket.ReceiveAsync(buffer.AsMemory(received == buffer.Length ? 0 : received), cancellationToken);
                received = received == buffer.Length ? result.Count : received + result.Count;
                if (result.EndOfMessage)
                {
                    // A text message is handed on as checked JSON, as our client hands on each text frame's data, so the
                    // baseline does the work a JSON consumer needs done: without it, only ours paid for the check.
                    if (received == settings.MessageSize && (result.MessageType != WebSocketMessageType.Text || IsJson(buffer.AsSpan(0, received))))
                    {
                        counter.Add(1);
                    }

                    received = 0;
                }
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
        }

        try
        {
            using var close = new CancellationTokenSource(TimeSpan.FromSeconds(5));
            await socket.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, null, close.Token);
        }
        catch (Exception ex) when (ex is WebSocketException or OperationCanceledException)
        {
            // The flood ends either way.
        }
    }

    /// <summary>Whether the bytes are one JSON value in valid UTF-8: the check our client makes on a text frame's data.</summary>
    private static bool IsJson(ReadOnlySpan<byte> message)
    {
        if (!System.Text.Unicode.Utf8.IsValid(message))
        {
            return false;
        }

        try
        {
            var reader = new Utf8JsonReader(message);
            reader.Read();
            reader.Skip();
            return !reader.Read();
        }
        catch (JsonException)
        {
            return false;
        }
    }

    /// <summary>A shared message count, and a signal for when every stream is connected.</summary>
    private sealed class Counter(int streams)
    {
        private readonly TaskCompletionSource _allReady = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private long _value;
        private int _ready;

        public long Value => Interlocked.Read(ref _value);

        public Task AllReady => _allReady.Task;

        public int ReadyStreams => Volatile.Read(ref _ready);

        public void Add(long count) => Interlocked.Add(ref _value, count);

        public void StreamReady()
        {
            if (Interlocked.Increment(ref _ready) == streams)
            {
                _allReady.TrySetResult();
            }
        }
    }
}
