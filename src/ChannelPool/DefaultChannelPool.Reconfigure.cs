using Microsoft.Extensions.Options;

namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    /// <inheritdoc />
    public int PoolSize => _state.Settings.PoolSize;

    /// <inheritdoc />
    public int RefillThreshold => _state.RefillThreshold;

    /// <inheritdoc />
    public int MaxChannels => _state.Settings.MaxChannels;

    /// <summary>
    /// Applies new settings to the running pool, without a restart and without dropping a channel.
    /// </summary>
    /// <remarks>
    /// <list type="bullet">
    /// <item>Sizing applies at once. If the open channels fall short of a larger <see cref="ChannelPoolOptions.PoolSize"/>, a
    /// refill starts now. A smaller pool shrinks as surplus channels reach their deadlines and are not replaced.</item>
    /// <item>A new <see cref="ChannelPoolOptions.ChannelLifetime"/> or <see cref="ChannelPoolOptions.LifetimeJitter"/>
    /// also moves the deadlines of channels already open: each keeps its own random share of the jitter, and channels now
    /// past their new deadline are evicted at their next lease, release or cleanup.</item>
    /// <item>An adaptive <see cref="ChannelPoolOptions.IdleTarget"/> keeps its target and its memory of demand through a
    /// reload, within the new bounds; switching to it starts the target at <see cref="ChannelPoolOptions.PoolSize"/>.</item>
    /// <item>Timeouts (<see cref="ChannelPoolOptions.IdleTimeout"/> included), <see cref="ChannelPoolOptions.LeaseMode"/>,
    /// <see cref="ChannelPoolOptions.MaxConcurrentOpens"/>, <see cref="ChannelPoolOptions.CleanupInterval"/>,
    /// <see cref="ChannelPoolOptions.AcquireWhilePaused"/> and <see cref="ChannelPoolOptions.IsFatalError"/> apply to what
    /// happens next; <see cref="ChannelPoolOptions.LeakDetectionThreshold"/> to leases that begin from now on.</item>
    /// <item><see cref="ChannelPoolOptions.Name"/>, <see cref="ChannelPoolOptions.Resilience"/> and
    /// <see cref="ChannelPoolOptions.OpenPipeline"/> shape the pool's identity and open pipeline, and keep their
    /// original values until the pool is recreated.</item>
    /// </list>
    /// </remarks>
    /// <param name="options">The new settings.</param>
    /// <exception cref="OptionsValidationException"><paramref name="options"/> breaks a rule; the pool keeps its settings.</exception>
    /// <exception cref="ObjectDisposedException">The pool was disposed.</exception>
    public void Reconfigure(ChannelPoolOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var validation = new ChannelPoolOptionsValidator().Validate(Name, options);
        if (validation.Failed)
        {
            throw new OptionsValidationException(Name, typeof(ChannelPoolOptions), validation.Failures);
        }

        // The open pipeline was built once; its settings keep their original values.
        var current = _state.Settings;
        var settings = PoolSettings.From(options) with
        {
            RetryBaseDelay = current.RetryBaseDelay,
            BreakDuration = current.BreakDuration,
        };
        var opens = _state.Reconfigure(settings);
        _clock.Follow(settings.ChannelLifetime);
        _cleanupTimer.Change(settings.CleanupInterval, settings.CleanupInterval);
        RescheduleExpiry(settings.ChannelLifetime);
        WatchForLeaks(settings.LeakDetectionThreshold);
        FollowSharing();
        RescheduleIdleTarget(settings);
        ScheduleRenewal(settings.FactoryLifetime);
        Log.PoolReconfigured(_logger, Name, settings.PoolSize, settings.MaxChannels, settings.RefillThreshold, settings.ChannelLifetime, settings.LeaseMode);
        StartOpens(opens);
    }
}
