namespace ChannelPool;

/// <summary>How a <see cref="BalancedChannelPool{TChannel}"/> chooses the address a lease goes to.</summary>
public enum BalancingPolicy
{
    /// <summary>
    /// Picks two addresses at random and leases from the one with fewer calls in flight (power of two choices). Calls
    /// follow load: an address that answers slowly holds its calls longer, so it is picked less, with no latency table
    /// to keep. The default.
    /// </summary>
    PowerOfTwoChoices = 0,

    /// <summary>Leases from each address in turn, whatever its load.</summary>
    RoundRobin = 1,
}
