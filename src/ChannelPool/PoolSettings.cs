namespace ChannelPool;

/// <summary>
/// The validated values a running pool works from, copied out of <see cref="ChannelPoolOptions"/> so that later
/// changes to an options object cannot reach a pool half-way through an operation.
/// </summary>
internal sealed record PoolSettings(
    int PoolSize,
    int MaxChannels,
    int RefillThreshold,
    TimeSpan ChannelLifetime,
    double LifetimeJitter,
    TimeSpan CleanupInterval,
    LeaseMode LeaseMode,
    IdleOrder IdleOrder,
    int MaxLeasesPerChannel,
    TimeSpan AcquireTimeout,
    int MaxConcurrentOpens,
    TimeSpan CloseTimeout,
    TimeSpan DrainTimeout,
    TimeSpan RetryBaseDelay,
    TimeSpan BreakDuration)
{
    public static PoolSettings From(ChannelPoolOptions options) => new(
        options.PoolSize,
        options.MaxChannels,
        options.RefillThreshold,
        options.ChannelLifetime,
        options.LifetimeJitter,
        options.CleanupInterval,
        options.LeaseMode,
        options.IdleOrder,
        options.MaxLeasesPerChannel,
        options.AcquireTimeout,
        options.MaxConcurrentOpens,
        options.CloseTimeout,
        options.DrainTimeout,
        options.Resilience.Retry.Delay,
        options.Resilience.CircuitBreaker.BreakDuration);
}
