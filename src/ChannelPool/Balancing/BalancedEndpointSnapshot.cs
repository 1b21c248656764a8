namespace ChannelPool;

/// <summary>One address of a <see cref="BalancedChannelPool{TChannel}"/>, as it stood when read.</summary>
public sealed class BalancedEndpointSnapshot
{
    internal BalancedEndpointSnapshot(PoolAddress address, string poolName, EndpointState state, int inFlight, long calls, long failures, int ejections, TimeSpan? ejectedFor, ChannelPoolSnapshot pool)
    {
        Address = address;
        PoolName = poolName;
        State = state;
        InFlight = inFlight;
        Calls = calls;
        Failures = failures;
        Ejections = ejections;
        EjectedFor = ejectedFor;
        Pool = pool;
    }

    /// <summary>The address.</summary>
    public PoolAddress Address { get; }

    /// <summary>The name of the address's own pool, which tags its logs and measurements.</summary>
    public string PoolName { get; }

    /// <summary>Whether it takes leases.</summary>
    public EndpointState State { get; }

    /// <summary>Leases out now: the calls in flight there.</summary>
    public int InFlight { get; }

    /// <summary>Leases it has ended since it joined.</summary>
    public long Calls { get; }

    /// <summary>Failed opens and broken calls since it joined.</summary>
    public long Failures { get; }

    /// <summary>How many ejections its next ejection time is counted from (it decays while the address stays healthy).</summary>
    public int Ejections { get; }

    /// <summary>How much longer it stays ejected, or null when it is not.</summary>
    public TimeSpan? EjectedFor { get; }

    /// <summary>Its own pool's counts.</summary>
    public ChannelPoolSnapshot Pool { get; }

    /// <inheritdoc/>
    public override string ToString() =>
        $"{Address}: {State}, in flight {InFlight}, calls {Calls}, failures {Failures}, ejections {Ejections} ({Pool})";
}
