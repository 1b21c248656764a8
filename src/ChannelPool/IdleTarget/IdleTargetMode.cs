namespace ChannelPool;

/// <summary>How a pool sets its idle target: the idle count a refill fills back up to.</summary>
public enum IdleTargetMode
{
    /// <summary>
    /// The target is <see cref="ChannelPoolOptions.PoolSize"/>, always: the original pool's rule, and HikariCP's
    /// <c>minimumIdle</c> and Npgsql's <c>Min Pool Size</c>.
    /// </summary>
    Fixed,

    /// <summary>
    /// The target follows demand: headroom for the callers who may arrive, counting the channels already in use (the
    /// recent peak of channels in use less those in use now, as many again as are in use now within half the room left
    /// under <see cref="ChannelPoolOptions.MaxChannels"/>, and the channels used up while one opens). It rises at once
    /// and decays slowly, between <see cref="IdleTargetOptions.Minimum"/> and <see cref="ChannelPoolOptions.MaxChannels"/>;
    /// it starts at <see cref="ChannelPoolOptions.PoolSize"/>.
    /// </summary>
    Adaptive,
}
