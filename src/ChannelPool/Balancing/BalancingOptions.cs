using System.Net;

namespace ChannelPool;

/// <summary>
/// How a <see cref="BalancedChannelPool{TChannel}"/> spreads leases over its addresses, ejects a sick one and follows
/// DNS. The defaults follow Envoy's outlier detection where it has one.
/// </summary>
public sealed class BalancingOptions
{
    /// <summary>How a lease chooses its address. Default <see cref="BalancingPolicy.PowerOfTwoChoices"/>.</summary>
    public BalancingPolicy Policy { get; set; } = BalancingPolicy.PowerOfTwoChoices;

    /// <summary>
    /// Failures in a row that eject an address: failed opens, and calls that broke their channel (communication errors
    /// and timeouts; a service's fault does not count). Default 5, Envoy's <c>consecutive_5xx</c>.
    /// </summary>
    public int ConsecutiveFailures { get; set; } = 5;

    /// <summary>
    /// How long an address stays out at its first ejection; each further ejection adds as much again, up to
    /// <see cref="MaxEjectionTime"/>. Default 30 s, Envoy's <c>base_ejection_time</c>.
    /// </summary>
    public TimeSpan BaseEjectionTime { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>The longest an address stays out. Default 5 minutes, Envoy's <c>max_ejection_time</c>.</summary>
    public TimeSpan MaxEjectionTime { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>
    /// The most addresses ejected at once, as a percentage of all of them; one address may always be ejected when
    /// there are two or more. Default 50: with three instances one may be out, and never so many that the rest drown.
    /// </summary>
    public int MaxEjectionPercent { get; set; } = 50;

    /// <summary>
    /// Ejects an address whose mean call time over an <see cref="OutlierInterval"/> stands this many times above the
    /// median of the others'. Default 5; 0 turns latency ejection off.
    /// </summary>
    public double LatencyEjectionFactor { get; set; } = 5;

    /// <summary>Calls an address must have finished in an interval before its latency is judged. Default 20.</summary>
    public int LatencyMinimumCalls { get; set; } = 20;

    /// <summary>
    /// How often latency is judged, ejected addresses are let back in, and an address's ejection count decays by one
    /// when it stayed healthy (and has been back at least half an interval). Default 10 s, Envoy's <c>interval</c>.
    /// </summary>
    public TimeSpan OutlierInterval { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Resolves each address given by host name to its IP addresses and pools each of them on its own, again every
    /// <see cref="ResolveInterval"/> and whenever every address is ejected: new ones join, vanished ones drain. Default
    /// false: an address is used as given, and the operating system resolves it at each connect.
    /// </summary>
    public bool ResolveHostNames { get; set; }

    /// <summary>How often host names are resolved again when <see cref="ResolveHostNames"/> is on. Default 30 s.</summary>
    public TimeSpan ResolveInterval { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>Resolves a host name; default <see cref="Dns.GetHostAddressesAsync(string, CancellationToken)"/>.</summary>
    public Func<string, CancellationToken, Task<IPAddress[]>>? Resolver { get; set; }

    internal BalancingOptions Clone() => (BalancingOptions)MemberwiseClone();

    /// <summary>Every problem with these options, each naming the option; empty when they are valid.</summary>
    internal List<string> Validate()
    {
        var failures = new List<string>();
        if (!Enum.IsDefined(Policy))
        {
            failures.Add($"{nameof(Policy)} must be {nameof(BalancingPolicy.PowerOfTwoChoices)} or {nameof(BalancingPolicy.RoundRobin)}; it was {Policy}.");
        }

        if (ConsecutiveFailures < 1)
        {
            failures.Add($"{nameof(ConsecutiveFailures)} must be at least 1; it was {ConsecutiveFailures}.");
        }

        if (BaseEjectionTime <= TimeSpan.Zero)
        {
            failures.Add($"{nameof(BaseEjectionTime)} must be positive; it was {BaseEjectionTime}.");
        }

        if (MaxEjectionTime < BaseEjectionTime)
        {
            failures.Add($"{nameof(MaxEjectionTime)} must be at least {nameof(BaseEjectionTime)} ({BaseEjectionTime}); it was {MaxEjectionTime}.");
        }

        if (MaxEjectionPercent is < 0 or > 100)
        {
            failures.Add($"{nameof(MaxEjectionPercent)} must be between 0 and 100; it was {MaxEjectionPercent}.");
        }

        if (double.IsNaN(LatencyEjectionFactor) || LatencyEjectionFactor < 0 || (LatencyEjectionFactor > 0 && LatencyEjectionFactor <= 1))
        {
            failures.Add($"{nameof(LatencyEjectionFactor)} must be 0 (off) or above 1; it was {LatencyEjectionFactor}.");
        }

        if (LatencyMinimumCalls < 1)
        {
            failures.Add($"{nameof(LatencyMinimumCalls)} must be at least 1; it was {LatencyMinimumCalls}.");
        }

        if (OutlierInterval <= TimeSpan.Zero)
        {
            failures.Add($"{nameof(OutlierInterval)} must be positive; it was {OutlierInterval}.");
        }

        if (ResolveInterval <= TimeSpan.Zero)
        {
            failures.Add($"{nameof(ResolveInterval)} must be positive; it was {ResolveInterval}.");
        }

        return failures;
    }
}
