using System.Diagnostics.Metrics;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.ObjectPool;
using Microsoft.Extensions.Options;
using Polly;
using Polly.CircuitBreaker;

namespace ChannelPool;

/// <summary>
/// A pool of pre-opened channels. It opens channels on a low-priority background worker, refills when the idle count
/// falls to <see cref="ChannelPoolOptions.RefillThreshold"/>, replaces channels before their lifetime ends, and hands
/// them out as <see cref="ChannelLease{TChannel}"/>s, first come first served.
/// </summary>
/// <typeparam name="TChannel">The channel type; the pool knows it only through an <see cref="IPooledChannelFactory{TChannel}"/>.</typeparam>
/// <remarks>
/// <para>
/// Lease with <see cref="AcquireAsync"/> (or, from synchronous code, <see cref="Acquire"/>) and dispose the lease to give
/// the channel back. Operators' controls: <see cref="ClearAsync"/> retires every channel opened so far (a rotated
/// certificate, a failover), <see cref="Pause"/> and <see cref="Resume"/> stop and restart opening and leasing,
/// <see cref="ChannelPoolOptions.IdleTimeout"/> closes what a burst left idle, and
/// <see cref="ChannelPoolOptions.LeakDetectionThreshold"/> logs leases held too long with the stack that took them.
/// </para>
/// <para>Every member is safe to call from any thread.</para>
/// </remarks>
// The pool decides nothing by itself: PoolState (State/PoolState.cs, with each feature's transitions in its folder) owns
// every count and queue behind one gate and returns, from each transition, what to do next. This class does it, outside
// the gate: it runs the factory, completes waiters, starts opens and closes, records telemetry. Its partial files sit
// in the feature folders beside their PoolState halves (Leasing/, Opening/, Eviction/, Draining/, Resilience/,
// Clearing/, Pausing/, LeakDetection/, IdleTarget/, Sharing/). The lease and release fast paths hold the gate for a
// few instructions and read no precise clock (see PoolClock).
public sealed partial class DefaultChannelPool<TChannel> : IChannelPool<TChannel>
    where TChannel : class
{
    private readonly IPooledChannelFactory<TChannel> _factory;
    private readonly TimeProvider _timeProvider;
    private readonly ILogger _logger;
    private readonly ChannelPoolMetrics _metrics;
    private readonly ResiliencePipeline _openPipeline;
    private readonly BackgroundWorker _worker = BackgroundWorker.Shared;
    private readonly ObjectPool<Waiter<TChannel>> _waiterPool;
    private readonly PoolClock _clock;
    private readonly ITimer _cleanupTimer;
    private readonly ITimer _expiryTimer;
    private readonly ITimer _resumeTimer;
    private readonly ITimer _leakTimer;
    private readonly ITimer _idleTargetTimer;
    private readonly CancellationTokenSource _shutdown = new();

    // Every count, queue and flag the pool decides by lives here, behind its gate; this class only acts on its verdicts.
    private readonly PoolState<TChannel> _state;

    /// <summary>Creates a pool. Nothing is opened until <see cref="WarmUpAsync(CancellationToken)"/> or the first acquire.</summary>
    /// <param name="factory">Opens, checks and closes the channels.</param>
    /// <param name="options">The pool's settings; validated here and copied, so later changes have no effect.</param>
    /// <param name="timeProvider">The source of all time the pool uses. Defaults to <see cref="TimeProvider.System"/>.</param>
    /// <param name="loggerFactory">Where the pool logs. Defaults to no logging.</param>
    /// <param name="meterFactory">Creates the pool's meter. Defaults to a meter the pool owns.</param>
    /// <exception cref="OptionsValidationException"><paramref name="options"/> breaks a rule; the message names each one.</exception>
    public DefaultChannelPool(
        IPooledChannelFactory<TChannel> factory,
        ChannelPoolOptions options,
        TimeProvider? timeProvider = null,
        ILoggerFactory? loggerFactory = null,
        IMeterFactory? meterFactory = null)
    {
        ArgumentNullException.ThrowIfNull(factory);
        ArgumentNullException.ThrowIfNull(options);

        Name = options.Name ?? typeof(TChannel).Name;
        var validation = new ChannelPoolOptionsValidator().Validate(Name, options);
        if (validation.Failed)
        {
            throw new OptionsValidationException(Name, typeof(ChannelPoolOptions), validation.Failures);
        }

        _factory = factory;
        var settings = PoolSettings.From(options);
        _timeProvider = timeProvider ?? TimeProvider.System;
        _logger = loggerFactory?.CreateLogger("ChannelPool") ?? NullLogger.Instance;
        // The provider's pool for a disposable type disposes the waiters it drops when it is full.
        _waiterPool = new DefaultObjectPoolProvider { MaximumRetained = 64 }.Create(new WaiterPolicy(this));
        _metrics = new ChannelPoolMetrics(Name, GetSnapshot, GetLimits, meterFactory);
        CircuitBreakerStateProvider? breakerStateProvider = null;
        if (options.OpenPipeline is { } custom)
        {
            _openPipeline = custom;
        }
        else
        {
            // A provider the caller set is honoured, so the caller can read the breaker too.
            breakerStateProvider = options.Resilience.CircuitBreaker.StateProvider ?? new CircuitBreakerStateProvider();
            _openPipeline = OpenPipeline.Build(options.Resilience, Name, _timeProvider, breakerStateProvider, OnBreakerOpened, OnBreakerClosed);
        }

        _clock = new PoolClock(_timeProvider, settings.ChannelLifetime);
        _state = new PoolState<TChannel>(Name, settings, _timeProvider, _clock, breakerStateProvider);
        _resumeTimer = _timeProvider.CreateTimer(
            static state => ((DefaultChannelPool<TChannel>)state!).ResumeOpens(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _cleanupTimer = _timeProvider.CreateTimer(
            static state => ((DefaultChannelPool<TChannel>)state!).RunCleanup(), this, settings.CleanupInterval, settings.CleanupInterval);
        _expiryTimer = CreateExpiryTimer(settings.ChannelLifetime);
        _leakTimer = _timeProvider.CreateTimer(
            static state => ((DefaultChannelPool<TChannel>)state!).FindLeaks(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        WatchForLeaks(settings.LeakDetectionThreshold);
        FollowSharing();
        _idleTargetTimer = CreateIdleTargetTimer(settings);
        ScheduleRenewal(settings.FactoryLifetime);

        Log.PoolCreated(_logger, Name, settings.PoolSize, settings.MaxChannels, settings.RefillThreshold, settings.ChannelLifetime, settings.LeaseMode);
    }

    /// <inheritdoc />
    public string Name { get; }

    /// <inheritdoc />
    public LeaseMode LeaseMode => _state.Settings.LeaseMode;

    /// <inheritdoc />
    public ChannelPoolSnapshot GetSnapshot() => _state.Snapshot();

    private (int IdleTarget, int RefillThreshold, int MaxChannels) GetLimits() =>
        (_state.IdleTarget, _state.RefillThreshold, _state.Settings.MaxChannels);

    private sealed class WaiterPolicy(DefaultChannelPool<TChannel> pool) : IPooledObjectPolicy<Waiter<TChannel>>
    {
        public Waiter<TChannel> Create() => new(pool);

        public bool Return(Waiter<TChannel> obj) => true;
    }
}
