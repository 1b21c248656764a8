namespace ChannelPool;

/// <summary>What an acquire does while the pool is paused (<see cref="ChannelPoolOptions.AcquireWhilePaused"/>).</summary>
public enum PausedAcquireMode
{
    /// <summary>
    /// Throw <see cref="ChannelPoolUnavailableException"/> at once, saying the pool is paused: a caller learns of a
    /// maintenance window at its first call instead of after <see cref="ChannelPoolOptions.AcquireTimeout"/>.
    /// </summary>
    Fail = 0,

    /// <summary>
    /// Wait, first come first served, until the pool resumes, the caller's <see cref="ChannelPoolOptions.AcquireTimeout"/>
    /// passes (<see cref="ChannelPoolTimeoutException"/>), or its token is cancelled. For pauses shorter than the acquire
    /// timeout, such as a certificate swap, callers then never see them.
    /// </summary>
    Wait = 1,
}
