namespace ChannelPool;

/// <summary>What happens to a channel when its lease is released.</summary>
public enum LeaseMode
{
    /// <summary>
    /// A healthy channel that is still within its lifetime goes back to the idle set for the next caller.
    /// Best for stateless (per-call) services: one negotiation serves many calls.
    /// </summary>
    Reuse = 0,

    /// <summary>
    /// The channel is closed after one lease, in the background, and never handed out again. These are the original
    /// 2007 pool's semantics and suit sessionful services, where a channel carries one client's session state.
    /// </summary>
    SingleUse = 1,
}
