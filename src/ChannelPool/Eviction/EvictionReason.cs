namespace ChannelPool;

/// <summary>Why the pool closed a channel.</summary>
public enum EvictionReason
{
    /// <summary>The channel reached its (jittered) lifetime deadline.</summary>
    LifetimeExpired = 0,

    /// <summary>The factory reported the channel unusable, for example because it faulted.</summary>
    Unusable = 1,

    /// <summary>The lease holder marked the channel broken, for example after a failed call.</summary>
    Broken = 2,

    /// <summary>The pool is shutting down.</summary>
    Shutdown = 3,

    /// <summary>The pool runs in <see cref="LeaseMode.SingleUse"/> and the channel has served its one lease.</summary>
    SingleUse = 4,

    /// <summary>
    /// The pool was cleared (<see cref="DefaultChannelPool{TChannel}.ClearAsync"/>, or an error its
    /// <see cref="ChannelPoolOptions.IsFatalError"/> rule calls fatal) after this channel's open began.
    /// </summary>
    Cleared = 5,

    /// <summary>
    /// The channel idled longer than <see cref="ChannelPoolOptions.IdleTimeout"/> while more channels idled than the pool
    /// keeps ready.
    /// </summary>
    IdleTimeout = 6,
}
