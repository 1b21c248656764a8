using ChannelPool.Perf.Clients;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Perf.Stats;

namespace ChannelPool.Perf.Scenarios.Proxies;

/// <summary>The proxies scenario's settings.</summary>
internal sealed record ProxiesSettings
{
    /// <summary>Gets the calls per cell (the original: 20,000), split evenly over the rounds.</summary>
    public int Calls { get; init; } = 20_000;

    public IReadOnlyList<int> Concurrency { get; init; } = [1, 8, 32];

    public IReadOnlyList<string> Bindings { get; init; } = WcfBinding.All;

    public IReadOnlyList<string> Kinds { get; init; } = ProxiesScenario.AllKinds;

    /// <summary>Gets how many times each cell runs; the kinds run in turn, in reverse order every other round, and each cell sums its rounds.</summary>
    public int Rounds { get; init; } = 2;

    /// <summary>Gets the longest one round of one cell may run before it stops early; <see langword="null"/> for no limit.</summary>
    public TimeSpan? MaxRoundTime { get; init; }

    /// <summary>
    /// Gets the longest each kind's unreported warm-up pass may run, per binding. Long enough for the JIT to finish
    /// tiering the call path up: with 100 calls, the kind that happened to run first paid for it in its first round
    /// (docs/performance.md).
    /// </summary>
    public TimeSpan WarmUpTime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>Gets the most calls each kind's warm-up pass makes, per binding (20,000 was enough for tier-up on net.tcp).</summary>
    public int WarmUpCalls { get; init; } = 20_000;
}

/// <summary>One cell: a kind of proxy, on one binding, at one concurrency.</summary>
internal sealed record ProxiesResult(
    string Binding, string Kind, int Concurrency, int Calls, double Seconds, double CallsPerSecond, LatencySummary Latency, double CpuMicrosPerCall,
    double AllocatedBytesPerCall, ServerCountsSnapshot WarmUp, ServerCountsSnapshot DuringCalls);
