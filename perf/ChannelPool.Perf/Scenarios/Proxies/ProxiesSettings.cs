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

    /// <summary>
    /// Gets the service settings a binding with sessions runs against: a session's calls served at once, and one at a
    /// time as a WCF service with its defaults serves them. A binding without sessions runs once, against the first.
    /// </summary>
    public IReadOnlyList<ServiceConcurrency> Services { get; init; } = [ServiceConcurrency.Multiple, ServiceConcurrency.Single];

    /// <summary>Gets the <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> of the shared pooled kind.</summary>
    public int SharedLeasesPerChannel { get; init; } = ProxiesScenario.SharedLeasesPerChannel;

    /// <summary>Gets how long the service spends on each call (<c>EchoAfter</c>); zero calls <c>Echo</c>, which answers at once.</summary>
    public TimeSpan ServiceTime { get; init; } = TimeSpan.Zero;

    /// <summary>
    /// Gets how many rounds each cell runs: every kind takes one turn a round, in reverse order every other round, so
    /// the kinds' turns pair up round by round (<see cref="Proxies.PairedRatio"/>); each cell's totals sum its turns.
    /// </summary>
    public int Rounds { get; init; } = 2;

    /// <summary>Gets the longest one round of one cell may run before it stops early; <see langword="null"/> for no limit.</summary>
    public TimeSpan? MaxRoundTime { get; init; }

    /// <summary>
    /// Gets the longest a round of the per-call kinds (plain and cached factory) may run, when shorter than
    /// <see cref="MaxRoundTime"/>. They pay a connection and a handshake a call, 10 to 200 times slower than pooled reuse,
    /// so a shorter round still holds enough calls for the ratios they are the denominator of.
    /// </summary>
    public TimeSpan? PerCallRoundTime { get; init; }

    /// <summary>The longest one round of <paramref name="kind"/> may run: <see cref="PerCallRoundTime"/> for the per-call kinds when it is shorter.</summary>
    public TimeSpan? RoundTimeOf(string kind) =>
        kind is ProxiesScenario.PerCall or ProxiesScenario.PerCallCached && PerCallRoundTime is { } perCall && (MaxRoundTime is not { } max || perCall < max)
            ? perCall
            : MaxRoundTime;

    /// <summary>
    /// Gets the longest each kind's unreported warm-up pass may run, per binding. Long enough for the JIT to finish
    /// tiering the call path up: with 100 calls, the kind that happened to run first paid for it in its first round
    /// (docs/performance.md).
    /// </summary>
    public TimeSpan WarmUpTime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Gets passes to run after this one, each with settings of its own (the suite's second pass has a service time);
    /// their cells join this pass's in one report.
    /// </summary>
    public IReadOnlyList<ProxiesSettings> MorePasses { get; init; } = [];

    /// <summary>Gets this pass and the ones after it, in the order they run.</summary>
    public IEnumerable<ProxiesSettings> Passes => [this, .. MorePasses.SelectMany(p => p.Passes)];

    /// <summary>Gets the most calls each kind's warm-up pass makes, per binding (20,000 was enough for tier-up on net.tcp).</summary>
    public int WarmUpCalls { get; init; } = 20_000;

    /// <summary>Gets the most calls of each kind's unrecorded turn at a cell's concurrency, after its set-up and before the first round.</summary>
    public int CellWarmUpCalls { get; init; } = 5_000;

    /// <summary>Gets the longest each kind's unrecorded turn at a cell's concurrency may run.</summary>
    public TimeSpan CellWarmUpTime { get; init; } = TimeSpan.FromSeconds(0.3);
}

/// <summary>
/// One cell: a kind of proxy, on one binding against one service setting (<c>Service</c>: how the service served a
/// session's calls, <see cref="WcfBinding.ServiceLabel"/>, or <see cref="WcfBinding.NoSession"/>) with a service time
/// (<c>ServiceTimeMs</c>, 0 when the service answers at once), at one concurrency. CPU is the client process's
/// (<c>CpuMicrosPerCall</c>) and the server process's (<c>ServerCpuMicrosPerCall</c>, NaN when unknown).
/// </summary>
internal sealed record ProxiesResult(
    string Binding, string Service, double ServiceTimeMs, string Kind, int Concurrency, int Calls, double Seconds, double CallsPerSecond, LatencySummary Latency, double CpuMicrosPerCall,
    double AllocatedBytesPerCall, ServerCountsSnapshot WarmUp, ServerCountsSnapshot DuringCalls, double ServerCpuMicrosPerCall = double.NaN, IReadOnlyList<double>? RoundCallsPerSecond = null)
{
    /// <summary>Gets the calls per second of each round's turn, in round order; the other kinds of the cell ran their turns beside these.</summary>
    public IReadOnlyList<double> RoundCallsPerSecond { get; init; } = RoundCallsPerSecond ?? [];
}
