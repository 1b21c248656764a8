using ChannelPool.Perf.Stats;

namespace ChannelPool.Perf.Scenarios.Broadcast;

/// <summary>The broadcast script's settings.</summary>
internal sealed record BroadcastSettings
{
    /// <summary>Gets the burst periods P to search at.</summary>
    public IReadOnlyList<TimeSpan> Periods { get; init; } = [TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(2), TimeSpan.FromSeconds(5), TimeSpan.FromSeconds(10)];

    /// <summary>Gets K: how many consecutive bursts must each finish before the next is due.</summary>
    public int Bursts { get; init; } = 100;

    /// <summary>Gets the bursts each scouting probe runs before the full K confirms the best M found.</summary>
    public int ScoutBursts { get; init; } = 5;

    /// <summary>Gets the first M tried.</summary>
    public int StartClients { get; init; } = 1000;

    /// <summary>
    /// Gets the largest M tried (also capped by the process's open-file limit, which over HTTP/1.1 is about 17,700 clients
    /// at a limit of 20,000; over HTTP/2 a hundred polls share a socket, so the CPU finds the limit first).
    /// </summary>
    public int MaxClients { get; init; } = 100_000;

    /// <summary>Gets the search's resolution: it stops when the pass/fail gap is at most this fraction of M.</summary>
    public double Resolution { get; init; } = 0.1;

    /// <summary>Gets how many clients connect at once.</summary>
    public int ConnectConcurrency { get; init; } = 64;

    /// <summary>Gets which transports run, one after the other.</summary>
    public PubSubTransportChoice Transports { get; init; } = PubSubTransportChoice.Ours;

    /// <summary>Gets whether our clients also run against the endpoint with a trivial topic rule (<see cref="TopicRuleEndpoint"/>).</summary>
    public bool CompareTopicRule { get; init; }

    /// <summary>Gets how many K-burst probes each side of the rule comparison runs, alternating, at one M, after the searches.</summary>
    public int CompareRounds { get; init; } = 4;

    /// <summary>
    /// Gets the M at which every transport runs <see cref="CompareRounds"/> K-burst probes side by side, in alternating
    /// order with every fleet connected throughout, instead of searching; null to search. What each delivery costs at one
    /// scale, on the same machine at the same time: the 2× question without two searches minutes apart.
    /// </summary>
    public int? SideBySide { get; init; }
}

/// <summary>One try at M clients.</summary>
internal sealed record BroadcastProbe(int Clients, int Bursts, bool Passed, int BurstsOnTime, double WorstBurstMs, LatencySummary Latency, string? Failure)
{
    /// <summary>Gets the processor time per delivered notification in the client process, in microseconds (NaN when not measured).</summary>
    public double ClientCpuMicrosPerDelivery { get; init; } = double.NaN;

    /// <summary>Gets the processor time per delivered notification in the server process, in microseconds (NaN when not measured).</summary>
    public double ServerCpuMicrosPerDelivery { get; init; } = double.NaN;

    /// <summary>Gets the bytes the client process allocated per delivered notification (NaN when not measured).</summary>
    public double ClientBytesPerDelivery { get; init; } = double.NaN;

    /// <summary>Gets the bytes the server process allocated per delivered notification (NaN when not measured).</summary>
    public double ServerBytesPerDelivery { get; init; } = double.NaN;
}

/// <summary>The search's outcome for one transport at one period.</summary>
/// <param name="Transport">The transport's name in the report.</param>
/// <param name="Protocol">The HTTP version its clients spoke, <c>HTTP/1.1</c> or <c>HTTP/2</c>.</param>
/// <param name="PeriodSeconds">P.</param>
/// <param name="Bursts">K.</param>
/// <param name="LargestClients">The largest M confirmed with all K bursts on time (0 if none).</param>
/// <param name="LimitReached">Whether the search stopped at its ceiling rather than at a failure.</param>
/// <param name="Limit">What the ceiling was, when it was reached; or, when no M held, that none did and down to what M the search went.</param>
/// <param name="Probes">Every probe, in order.</param>
internal sealed record BroadcastResult(string Transport, string Protocol, double PeriodSeconds, int Bursts, int LargestClients, bool LimitReached, string? Limit, IReadOnlyList<BroadcastProbe> Probes)
{
    /// <summary>Gets the probes of the topic-rule comparison's alternating rounds (<see cref="BroadcastSettings.CompareRounds"/>), if it ran.</summary>
    public IReadOnlyList<BroadcastProbe> Alternating { get; init; } = [];
}
