using Polly.CircuitBreaker;

namespace ChannelPool;

/// <summary>
/// How the pool follows its open pipeline's circuit breaker. Polly owns the breaker: its state, when it half-opens and
/// which open is its probe. The pool only reacts: it pauses opens for the break, fails waiting callers fast, sends
/// one open at a time while the breaker is not closed, and backs off between failed opens the breaker let through.
/// </summary>
public sealed partial class DefaultChannelPool<TChannel>
{
    private static readonly TimeSpan MinOpenBackoff = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan MaxOpenBackoff = TimeSpan.FromSeconds(30);

    // Set for the pipeline the pool builds. A pipeline given in the options is opaque: for it the snapshot shows what
    // the pipeline last said, a rejection (open or isolated) or a channel (closed).
    private readonly CircuitBreakerStateProvider? _breakerStateProvider;
    private BreakerState _lastBreakerVerdict;

    // Guarded by _gate.
    private bool _opensPaused;
    private long _resumeAt;
    private int _consecutiveOpenFailures;

    private BreakerState BreakerState => _breakerStateProvider is { } provider
        ? provider.CircuitState switch
        {
            CircuitState.Open => BreakerState.Open,
            CircuitState.HalfOpen => BreakerState.HalfOpen,
            CircuitState.Isolated => BreakerState.Isolated,
            _ => BreakerState.Closed,
        }
        : _lastBreakerVerdict;

    /// <summary>Breaker bookkeeping for a successful open: the server answers, so stop backing off.</summary>
    private void OnOpenSucceeded_Breaker_NoLock()
    {
        _lastBreakerVerdict = BreakerState.Closed;
        if (BreakerState == BreakerState.Closed)
        {
            _consecutiveOpenFailures = 0;
            _opensPaused = false;
        }
    }

    /// <summary>Called by the default pipeline's circuit breaker when its probe succeeded.</summary>
    private void OnBreakerClosed() => Log.BreakerClosed(_logger, Name);

    private void OnOpenFailed(Exception error)
    {
        TimeSpan? pause = null;
        var turnedAway = false;
        var failures = 0;
        var opens = 0;
        using (_gate.Enter())
        {
            OpenFailed_NoLock();
            if (_disposed)
            {
                UpdateDrainProgress_NoLock();
                return;
            }

            if (error is BrokenCircuitException or IsolatedCircuitException)
            {
                // Turned away by the breaker: wait out the break it names.
                turnedAway = true;
                _lastBreakerVerdict = error is IsolatedCircuitException ? BreakerState.Isolated : BreakerState.Open;
                pause = PauseOpens_NoLock((error as BrokenCircuitException)?.RetryAfter ?? _settings.BreakDuration);
            }
            else if (!_opensPaused && BreakerState == BreakerState.Closed)
            {
                // The pipeline gave up on this open but the breaker stays closed. Without a pause the refill would start
                // the next open at once, in a tight loop, for as long as the breaker's minimum throughput is not reached.
                failures = ++_consecutiveOpenFailures;
                var backoff = _settings.RetryBaseDelay * Math.Pow(2, Math.Min(failures - 1, 10));
                backoff = backoff < MinOpenBackoff ? MinOpenBackoff : backoff > MaxOpenBackoff ? MaxOpenBackoff : backoff;
                pause = PauseOpens_NoLock(backoff);
            }

            // The refill did not get its channel: keep refilling once opens resume.
            opens = Refill_NoLock(toPoolSize: true);
        }

        // Arm the resume before anyone is told: a caller released by the failure below may act at once, and the pool
        // must already be fully in its new state when it does.
        ArmResumeTimer(pause);
        if (turnedAway)
        {
            FailWaitersWhileBreakerOpen(pause ?? TimeSpan.Zero);
        }

        if (failures > 0)
        {
            Log.OpensBackingOff(_logger, Name, pause ?? TimeSpan.Zero, failures);
        }

        StartOpens(opens);
    }

    /// <summary>Called by the default pipeline's circuit breaker when it opens, before the failed open returns.</summary>
    private void OnBreakerOpened(TimeSpan breakDuration)
    {
        TimeSpan pause;
        using (_gate.Enter())
        {
            if (_disposed)
            {
                return;
            }

            pause = PauseOpens_NoLock(breakDuration);

            // Nothing starts while paused; this only marks the fill that resumes after the break.
            _ = Refill_NoLock(toPoolSize: true);
        }

        ArmResumeTimer(pause);
        FailWaitersWhileBreakerOpen(breakDuration);
    }

    /// <summary>
    /// Callers waiting on an empty pool would otherwise each sit out the full acquire timeout while the server is
    /// down. Fail them now, with the error that opened the breaker.
    /// </summary>
    private void FailWaitersWhileBreakerOpen(TimeSpan retryAfter)
    {
        List<Waiter<TChannel>>? waiters = null;
        List<(int Ready, TaskCompletionSource Done)>? warmUps;
        ChannelPoolSnapshot snapshot;
        using (_gate.Enter())
        {
            if (_idle.Count == 0 && _waiters.Count > 0)
            {
                waiters = AbandonAll_NoLock();
            }

            warmUps = _warmUpWaiters;
            _warmUpWaiters = null;
            snapshot = SnapshotNoLock();
        }

        var lastError = Volatile.Read(ref _lastOpenError);
        Log.BreakerOpened(_logger, Name, retryAfter, lastError);
        waiters?.ForEach(waiter => waiter.Fail(new ChannelPoolUnavailableException(Name, snapshot, retryAfter, lastError)));
        warmUps?.ForEach(warmUp => warmUp.Done.TrySetException(new ChannelPoolUnavailableException(Name, snapshot, retryAfter, lastError)));
    }

    /// <summary>
    /// Whether a caller finding no idle channel is refused at once rather than queued: the breaker stops opens and the
    /// break is not over. Once it is, the probe is about to go out, and the caller may wait for it.
    /// </summary>
    private bool RefusesWaiters_NoLock() => BreakerState switch
    {
        BreakerState.Isolated => true,
        BreakerState.Open => _opensPaused,
        _ => false,
    };

    /// <summary>Stops new opens until <paramref name="delay"/> from now; returns the delay to arm the resume timer with.</summary>
    private TimeSpan PauseOpens_NoLock(TimeSpan delay)
    {
        var resumeAt = _timeProvider.GetTimestamp() + _clock.ToTimestampDelta(delay);
        _resumeAt = _opensPaused ? Math.Max(_resumeAt, resumeAt) : resumeAt;
        _opensPaused = true;
        return RemainingPause_NoLock() ?? TimeSpan.Zero;
    }

    private TimeSpan? RemainingPause_NoLock()
    {
        if (!_opensPaused)
        {
            return null;
        }

        var remaining = _timeProvider.GetElapsedTime(_timeProvider.GetTimestamp(), _resumeAt);
        return remaining > TimeSpan.Zero ? remaining : TimeSpan.Zero;
    }

    // Timers are armed outside the gate: a TimeProvider may run a due callback on the calling thread.
    private void ArmResumeTimer(TimeSpan? delay)
    {
        if (delay is { } due && !Volatile.Read(ref _disposed))
        {
            try
            {
                _resumeTimer.Change(due, Timeout.InfiniteTimeSpan);
            }
            catch (ObjectDisposedException)
            {
                // The pool was disposed in between; nothing is left to resume.
            }
        }
    }

    /// <summary>
    /// The resume timer: lifts a pause that is over. If the breaker is open, the next open reaches Polly after the
    /// break, and Polly half-opens and lets it through as its probe.
    /// </summary>
    private void ResumeOpens()
    {
        TimeSpan? early = null;
        var opens = 0;
        using (_gate.Enter())
        {
            if (_disposed || !_opensPaused)
            {
                return;
            }

            // A later pause may have pushed the resume time out after this timer was armed.
            if (RemainingPause_NoLock() is { } remaining && remaining > TimeSpan.Zero)
            {
                early = remaining;
            }
            else
            {
                _opensPaused = false;
                opens = Refill_NoLock();
            }
        }

        if (early is { } wait)
        {
            Log.ResumeDeferred(_logger, Name, wait);
            ArmResumeTimer(early);
            return;
        }

        Log.OpensResumed(_logger, Name, BreakerState, opens);
        StartOpens(opens);
    }
}
