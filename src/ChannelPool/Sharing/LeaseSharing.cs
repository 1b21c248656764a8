namespace ChannelPool;

/// <summary>
/// Whether a lease joins a channel other leases already hold, when <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/>
/// is above 1.
/// </summary>
public enum LeaseSharing
{
    /// <summary>
    /// A lease always joins a leased channel with room, up to <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/>, before
    /// it takes an idle one: for a service known to serve one session's calls concurrently, without the cost of timing
    /// leases.
    /// </summary>
    Always,

    /// <summary>
    /// The default: leases share a channel only while that does not make them slower. The pool starts with a channel per lease, and
    /// watches leases in windows of at least 16 leases and 50 ms: how many end each second, and how long they last.
    /// It shares once a window of exclusive leases gives it a baseline, and stops as soon as a window of leases that
    /// share ends fewer than 1 / 1.5 of the baseline's leases a second (a service that serves one session's calls one
    /// at a time serves the callers of a shared channel one after another), or lasts more than 8 times as long (a
    /// stall); then it tries again after a tenth of a second, twice as long after each failed try, at most 5 minutes.
    /// With <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> at 1 nothing shares, and leases are not timed.
    /// </summary>
    Adaptive,
}
