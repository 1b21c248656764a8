namespace ChannelPool;

/// <summary>
/// Whether a lease joins a channel other leases already hold, when <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/>
/// is above 1.
/// </summary>
public enum LeaseSharing
{
    /// <summary>
    /// A lease always joins a leased channel with room, up to <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/>, before
    /// it takes an idle one. With <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> at 1 (the default), every lease has
    /// its channel to itself.
    /// </summary>
    Always,

    /// <summary>
    /// Leases share a channel only while that does not make them slower: the pool compares how long leases last while
    /// they share channels with how long they last while each has a channel of its own, stops sharing as soon as they
    /// take more than 1.5 times as long with it (a service that serves one session's calls one at a time queues callers
    /// on a shared channel), and tries sharing again later, after a tenth of a second at first and up to 5 minutes after repeated
    /// failures. It starts with a channel per lease, until 16 leases give it a baseline. Needs
    /// <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> above 1.
    /// </summary>
    Adaptive,
}
