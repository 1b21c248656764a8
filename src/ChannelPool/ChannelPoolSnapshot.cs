namespace ChannelPool;

/// <summary>A consistent picture of a pool's counts at one moment, as carried by pool exceptions and health checks.</summary>
/// <param name="Idle">Open channels waiting in the pool.</param>
/// <param name="Leased">Channels currently held by callers.</param>
/// <param name="Opening">Opens in flight on the background worker.</param>
/// <param name="Closing">Channels being closed in the background.</param>
/// <param name="Waiting">Callers waiting for a channel.</param>
/// <param name="BreakerState">The state of the circuit breaker that guards opens.</param>
/// <param name="TotalOpened">Channels opened since the pool was created.</param>
/// <param name="TotalClosed">Channels closed or aborted since the pool was created.</param>
public readonly record struct ChannelPoolSnapshot(
    int Idle,
    int Leased,
    int Opening,
    int Closing,
    int Waiting,
    BreakerState BreakerState,
    long TotalOpened,
    long TotalClosed)
{
    /// <summary>
    /// Gets whether the pool is paused (<see cref="DefaultChannelPool{TChannel}.Pause"/>): it opens nothing and hands
    /// out no channel until it is resumed. While paused, <see cref="Idle"/> counts the channels resting in the pool.
    /// </summary>
    public bool IsPaused { get; init; }

    /// <summary>
    /// Gets the idle target in force: the idle count a refill fills back up to. <see cref="ChannelPoolOptions.PoolSize"/>
    /// when the target is fixed; what the adaptive target decided when it follows demand (<see cref="IdleTargetOptions"/>).
    /// </summary>
    public int IdleTarget { get; init; }

    /// <summary>Formats the counts the way pool exceptions and logs show them.</summary>
    /// <returns>
    /// For example <c>idle=0, leased=126, opening=0, closing=0, waiting=3, breaker=Closed, target=50</c>, and <c>, paused</c>
    /// while paused.
    /// </returns>
    public override string ToString() =>
        $"idle={Idle}, leased={Leased}, opening={Opening}, closing={Closing}, waiting={Waiting}, breaker={BreakerState}, target={IdleTarget}{(IsPaused ? ", paused" : string.Empty)}";
}
