namespace ChannelPool;

/// <summary>
/// The state of the circuit breaker in a pool's open pipeline, as <see cref="ChannelPoolSnapshot.BreakerState"/> reports
/// it. The pool reads it from Polly's breaker; it is a type of the pool's own so that Polly's types stay out of the
/// pool's public surface.
/// </summary>
public enum BreakerState
{
    /// <summary>Opens run normally.</summary>
    Closed = 0,

    /// <summary>Opens failed too often: the pool opens nothing and fails waiting callers fast until the break ends.</summary>
    Open = 1,

    /// <summary>The break is over and one probe open decides whether the breaker closes or opens again.</summary>
    HalfOpen = 2,

    /// <summary>The breaker was opened by hand and stays open until it is closed by hand.</summary>
    Isolated = 3,
}
