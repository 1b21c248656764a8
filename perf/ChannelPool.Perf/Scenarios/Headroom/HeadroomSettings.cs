using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Stats;
using ChannelPool.Testing.ServiceModel;

namespace ChannelPool.Perf.Scenarios.Headroom;

/// <summary>The headroom scenario's settings: the load's steps, how long each lasts, and the lifetime both pools run with.</summary>
internal sealed record HeadroomSettings
{
    /// <summary>The bindings the scenario runs: net.tcp with TLS, and WSHttp with a security context (the original's).</summary>
    public static readonly string[] AllBindings = [WcfBinding.NetTcp, WcfBinding.WsHttpSecureConversation];

    public IReadOnlyList<string> Bindings { get; init; } = AllBindings;

    /// <summary>Gets the most concurrent callers: the ramp doubles from 1 up to it, then drops to 1, then jumps back.</summary>
    public int Peak { get; init; } = 64;

    /// <summary>
    /// Gets the channel lifetime of both pools. It scales the run's time: the adaptive window and half-life follow it
    /// by default, and idle channels are reopened once per lifetime, so a short lifetime shows in seconds what 90 s
    /// shows in minutes.
    /// </summary>
    public TimeSpan ChannelLifetime { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Gets the lifetime jitter of both pools: the most the options allow, rather than the default 0.1, because the
    /// shortened lifetime does not shorten an open. At 90 s the default spreads the expiry of channels opened together
    /// over 9 s, far longer than their reopening takes; at a few seconds only the widest spread keeps that true.
    /// </summary>
    public double LifetimeJitter { get; init; } = 0.5;

    /// <summary>Gets how long each step of the ramp lasts.</summary>
    public TimeSpan StepTime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Gets how long the low step after the peak lasts, its quiet tail included. Before the tail the adaptive target
    /// holds the peak for a window (the lifetime) and then needs about four half-lives to come down.
    /// </summary>
    public TimeSpan LowStepTime { get; init; } = TimeSpan.FromSeconds(35);

    /// <summary>Gets the low step's tail over which the quiet figures (idle held, handshakes per minute) are measured.</summary>
    public TimeSpan QuietTime { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>Gets how long the sudden return to the peak after the low step lasts.</summary>
    public TimeSpan JumpTime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>Gets how many times each pool runs the whole load; the pools take turns, in reverse order every other round.</summary>
    public int Rounds { get; init; } = 2;

    /// <summary>Gets the ramp's steps: 1, 2, 4 … up to <see cref="Peak"/>.</summary>
    public IReadOnlyList<int> Ramp
    {
        get
        {
            List<int> steps = [];
            for (var callers = 1; callers < Peak; callers *= 2)
            {
                steps.Add(callers);
            }

            steps.Add(Peak);
            return steps;
        }
    }
}

/// <summary>One pool's run on one binding, summed over the rounds.</summary>
/// <param name="Binding">The binding's description.</param>
/// <param name="Pool">The pool: <c>fixed 50</c> or <c>adaptive</c>.</param>
/// <param name="Phases">Each step of the load, in order.</param>
/// <param name="LeaseWait">The time callers waited for a channel over the ramp and the low step (the jump has its own, in its phase).</param>
/// <param name="Timeline">The first round's counts every 100 ms, for the chart.</param>
internal sealed record HeadroomResult(string Binding, string Pool, IReadOnlyList<HeadroomPhase> Phases, LatencySummary LeaseWait, IReadOnlyList<HeadroomSample> Timeline)
{
    /// <summary>Gets the ramp's first step.</summary>
    public HeadroomPhase FirstStep => Phases[0];

    /// <summary>Gets the phases after the ramp's first step up to the jump: the rest of the ramp and the low step.</summary>
    public IEnumerable<HeadroomPhase> AfterFirstStep => Phases.Skip(1).Where(p => p.Kind != HeadroomPhaseKind.Jump);

    /// <summary>Gets the top of the ramp.</summary>
    public HeadroomPhase PeakStep => Phases.Last(p => p.Kind == HeadroomPhaseKind.Ramp);

    /// <summary>Gets the low step's quiet tail.</summary>
    public HeadroomPhase Quiet => Phases.Single(p => p.Kind == HeadroomPhaseKind.Quiet);

    /// <summary>Gets the sudden return to the peak.</summary>
    public HeadroomPhase Jump => Phases.Single(p => p.Kind == HeadroomPhaseKind.Jump);
}

/// <summary>What a step of the load is.</summary>
internal enum HeadroomPhaseKind
{
    /// <summary>A step of the ramp from 1 caller to the peak.</summary>
    Ramp,

    /// <summary>The low step's first part, while the adaptive target comes down.</summary>
    Settling,

    /// <summary>The low step's tail: quiet hours.</summary>
    Quiet,

    /// <summary>Back to the peak at once.</summary>
    Jump,
}

/// <summary>One step of the load, summed over the rounds.</summary>
/// <param name="Name">What the report calls it, for example <c>ramp 8</c>.</param>
/// <param name="Kind">Ramp, the low step's two parts, or the jump.</param>
/// <param name="Callers">Concurrent callers.</param>
/// <param name="Seconds">How long it ran, over all rounds.</param>
/// <param name="Calls">Calls completed.</param>
/// <param name="AwaitedOpens">Leases that waited for an open (the pool's <c>channelpool.channel.awaited_opens</c>).</param>
/// <param name="LeaseWait">The time callers waited for a channel (the pool's <c>channelpool.channel.wait_time</c>).</param>
/// <param name="MeanIdle">Idle channels, averaged over the step's samples.</param>
/// <param name="MeanOpen">Open channels (idle, leased and opening), averaged over the step's samples.</param>
/// <param name="MeanTarget">The idle target, averaged over the step's samples.</param>
/// <param name="Server">What the test services counted during the step: TLS handshakes, security context negotiations.</param>
internal sealed record HeadroomPhase(
    string Name, HeadroomPhaseKind Kind, int Callers, double Seconds, long Calls, long AwaitedOpens, LatencySummary LeaseWait, double MeanIdle, double MeanOpen, double MeanTarget, ServerCountsSnapshot Server)
{
    public double CallsPerSecond => Seconds > 0 ? Calls / Seconds : 0;
}

/// <summary>A pool's counts at one moment of a run.</summary>
/// <param name="Seconds">Since the run's load started.</param>
/// <param name="Callers">Concurrent callers then.</param>
/// <param name="Idle">Idle channels.</param>
/// <param name="Open">Idle, leased and opening channels.</param>
/// <param name="Target">The idle target.</param>
internal sealed record HeadroomSample(double Seconds, int Callers, int Idle, int Open, int Target);
