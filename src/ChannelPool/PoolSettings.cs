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
    TimeSpan BreakDuration,
    IdleTargetSettings IdleTarget)
{
    /// <summary>Gets how long a channel above the idle target may idle; <see cref="Timeout.InfiniteTimeSpan"/> when off.</summary>
    public TimeSpan IdleTimeout { get; init; } = Timeout.InfiniteTimeSpan;

    /// <summary>Gets how long a lease may be held before it is reported; <see langword="null"/> when detection is off.</summary>
    public TimeSpan? LeakDetectionThreshold { get; init; }

    public PausedAcquireMode AcquireWhilePaused { get; init; }

    /// <summary>Gets how often the factory is renewed; <see cref="Timeout.InfiniteTimeSpan"/> when never.</summary>
    public TimeSpan FactoryLifetime { get; init; } = Timeout.InfiniteTimeSpan;

    public Func<Exception, bool>? IsFatalError { get; init; }

    /// <summary>Gets whether leases share channels always (up to <see cref="MaxLeasesPerChannel"/>) or while it pays.</summary>
    public LeaseSharing LeaseSharing { get; init; }

    public static PoolSettings From(ChannelPoolOptions options)
    {
        var idleTimeout = options.IdleTimeout ?? DefaultIdleTimeout(options.ChannelLifetime);
        return new(
            options.PoolSize,
            options.MaxChannels,
            options.RefillThreshold ?? DefaultRefillThreshold(options.PoolSize),
            options.ChannelLifetime,
            options.LifetimeJitter,
            options.CleanupInterval ?? DefaultCleanupInterval(options.ChannelLifetime, idleTimeout),
            options.LeaseMode ?? LeaseMode.Reuse,
            options.IdleOrder,
            options.MaxLeasesPerChannel ?? 1,
            options.AcquireTimeout,
            options.MaxConcurrentOpens,
            options.CloseTimeout,
            options.DrainTimeout,
            options.Resilience.Retry.Delay,
            options.Resilience.CircuitBreaker.BreakDuration,
            IdleTargetFrom(options))
        {
            IdleTimeout = idleTimeout,
            LeakDetectionThreshold = options.LeakDetectionThreshold == Timeout.InfiniteTimeSpan ? null : options.LeakDetectionThreshold,
            AcquireWhilePaused = options.AcquireWhilePaused,
            IsFatalError = options.IsFatalError,
            LeaseSharing = options.LeaseSharing,
            FactoryLifetime = options.FactoryLifetime ?? Timeout.InfiniteTimeSpan,
        };
    }

    /// <summary>
    /// The idle target's settings: the window follows the channel lifetime, the half-life is a third of the window, and
    /// a refill threshold set in the options keeps its share of the pool size.
    /// </summary>
    public static IdleTargetSettings IdleTargetFrom(ChannelPoolOptions options)
    {
        var idleTarget = options.IdleTarget;
        var window = idleTarget.Window ?? options.ChannelLifetime;
        return new IdleTargetSettings(
            idleTarget.Mode,
            idleTarget.Minimum,
            window,
            idleTarget.DecayHalfLife ?? window / 3,
            options.RefillThreshold is { } threshold ? (double)threshold / options.PoolSize : null);
    }

    /// <summary>
    /// The refill threshold that goes with <paramref name="idleTarget"/>. Fixed, <see cref="RefillThreshold"/>. Adaptive,
    /// one below the target, so the idle count stays at the target's headroom and the next arrivals find their channels
    /// open; or, when the options set a refill threshold, its share of the pool size applied to the target.
    /// </summary>
    public int RefillThresholdFor(int idleTarget) => IdleTarget switch
    {
        { Mode: IdleTargetMode.Fixed } => RefillThreshold,
        { RefillShare: { } share } => (int)Math.Floor((idleTarget * share) + 1e-9),
        _ => idleTarget - 1,
    };

    /// <summary>Half the pool size, as the original's refill trigger.</summary>
    public static int DefaultRefillThreshold(int poolSize) => poolSize / 2;

    /// <summary>
    /// Half the lifetime less two seconds (43 s for 90 s, as the original), but never less than a quarter of it; and never
    /// longer than the idle timeout, so a channel idle past it closes within twice the timeout.
    /// </summary>
    public static TimeSpan DefaultCleanupInterval(TimeSpan lifetime, TimeSpan idleTimeout)
    {
        var halfLessTwo = lifetime / 2 - TimeSpan.FromSeconds(2);
        var quarter = lifetime / 4;
        var interval = halfLessTwo > quarter ? halfLessTwo : quarter;
        return idleTimeout != Timeout.InfiniteTimeSpan && idleTimeout < interval ? idleTimeout : interval;
    }

    /// <summary>Half the lifetime: a channel idle that long is left over from a burst, not part of the steady load.</summary>
    public static TimeSpan DefaultIdleTimeout(TimeSpan lifetime) => lifetime / 2;
}
