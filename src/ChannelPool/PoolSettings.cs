namespace ChannelPool;

/// <summary>
/// The validated values a running pool works from, copied out of <see cref="ChannelPoolOptions"/> so that later
/// changes to an options object cannot reach a pool half-way through an operation. The values an option leaves to
/// follow others (<see langword="null"/> in the options) are worked out here, and only here.
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
        options.RefillThreshold ?? DefaultRefillThreshold(options.PoolSize),
        options.ChannelLifetime,
        options.LifetimeJitter,
        options.CleanupInterval ?? DefaultCleanupInterval(options.ChannelLifetime),
        options.LeaseMode ?? LeaseMode.Reuse,
        options.IdleOrder,
        options.MaxLeasesPerChannel,
        options.AcquireTimeout,
        options.MaxConcurrentOpens,
        options.CloseTimeout,
        options.DrainTimeout,
        options.Resilience.Retry.Delay,
        options.Resilience.CircuitBreaker.BreakDuration);

    /// <summary>Half the pool size, as the original's refill trigger.</summary>
    public static int DefaultRefillThreshold(int poolSize) => poolSize / 2;

    /// <summary>Half the lifetime less two seconds (43 s for 90 s, as the original), but never less than a quarter of it.</summary>
    public static TimeSpan DefaultCleanupInterval(TimeSpan lifetime)
    {
        var halfLessTwo = lifetime / 2 - TimeSpan.FromSeconds(2);
        var quarter = lifetime / 4;
        return halfLessTwo > quarter ? halfLessTwo : quarter;
    }
}
