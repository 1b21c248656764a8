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

    /// <summary>Gets the largest M tried (also capped by the process's open-file limit).</summary>
    public int MaxClients { get; init; } = 20_000;

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
}

/// <summary>One try at M clients.</summary>
internal sealed record BroadcastProbe(int Clients, int Bursts, bool Passed, int BurstsOnTime, double WorstBurstMs, LatencySummary Latency, string? Failure)
{
    /// <summary>Gets the processor time per delivered notification in the client process, in microseconds (NaN when not measured).</summary>
    public double ClientCpuMicrosPerDelivery { get; init; } = double.NaN;

    /// <summary>Gets the processor time per delivered notification in the server process, in microseconds (NaN when not measured).</summary>
    public double ServerCpuMicrosPerDelivery { get; init; } = double.NaN;
}

/// <summary>The search's outcome for one transport at one period.</summary>
internal sealed record BroadcastResult(string Transport, double PeriodSeconds, int Bursts, int LargestClients, bool LimitReached, string? Limit, IReadOnlyList<BroadcastProbe> Probes)
{
    /// <summary>Gets the probes of the topic-rule comparison's alternating rounds (<see cref="BroadcastSettings.CompareRounds"/>), if it ran.</summary>
    public IReadOnlyList<BroadcastProbe> Alternating { get; init; } = [];
}
