namespace ChannelPool.Perf.Scenarios.Floor;

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
