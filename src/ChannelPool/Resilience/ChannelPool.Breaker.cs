using Polly.CircuitBreaker;

namespace ChannelPool;

/// <summary>
/// How the pool follows its open pipeline's circuit breaker: pausing opens while it is open, probing once when it
/// may half-open, failing waiting callers fast, and backing off after failed opens.
/// </summary>
public sealed partial class ChannelPool<TChannel>
{
    private static readonly TimeSpan MinOpenBackoff = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan MaxOpenBackoff = TimeSpan.FromSeconds(30);

    // True for the pipeline the pool builds: its breaker reports every transition through callbacks, so outcomes
    // are not used to guess at it. A custom pipeline reports nothing, so for it the pool infers from outcomes.
    private readonly bool _breakerReportsTransitions;

    // Guarded by _gate.
    private bool _opensPaused;
    private long _resumeAt;
    private int _consecutiveOpenFailures;
    private bool _probeInFlight;
    private long _probeGeneration;

    // The generation of a reserved probe that StartOpens has yet to post; 0 when none.
    private long _probeToStart;

    /// <summary>
    /// Half-open: reserves the one probe whose outcome closes or reopens the breaker. Opens already in flight from
    /// before the breaker opened do not count against it; they will be rejected or fail, and say nothing new.
    /// </summary>
    private int ReserveProbe_NoLock(int room)
    {
        if (_breakerState != CircuitState.HalfOpen || _probeInFlight || room <= 0)
        {
            return 0;
        }

        _probeInFlight = true;
        _probeGeneration++;
        Volatile.Write(ref _probeToStart, _probeGeneration);
        _openingCount++;
        return 1;
    }

    private long TakeProbeToStart() => Interlocked.Exchange(ref _probeToStart, 0);

    /// <summary>Breaker bookkeeping for a successful open; returns whether this closed the breaker.</summary>
    private bool OnOpenSucceeded_Breaker_NoLock(long probe)
    {
        if (probe != 0 && probe == _probeGeneration)
        {
            _probeInFlight = false;
        }

        var closed = false;
        if (!_breakerReportsTransitions && _breakerState != CircuitState.Closed)
        {
            _breakerState = CircuitState.Closed;
            _probeInFlight = false;
            closed = true;
        }

        if (_breakerState == CircuitState.Closed)
        {
            // The server answers: stop backing off.
            _consecutiveOpenFailures = 0;
            _opensPaused = false;
        }

        return closed;
    }

    private void OnOpenFailed(Exception error, long probe)
    {
        TimeSpan? pause = null;
        var breakerOpened = false;
        var failures = 0;
        var opens = 0;
        using (_gate.Enter())
        {
            _openingCount--;
            var wasProbe = probe != 0 && probe == _probeGeneration && _probeInFlight;
            if (wasProbe)
            {
                _probeInFlight = false;
            }

            if (_disposed)
            {
                UpdateDrainProgress_NoLock();
                return;
            }

            // The refill did not get its channel: keep refilling once opens resume.
            _refilling = true;
            var settings = _settings;
            if (error is BrokenCircuitException or IsolatedCircuitException)
            {
                // Turned away by the breaker. While a probe is out, only the probe's own outcome counts.
                if (_breakerState != CircuitState.HalfOpen || wasProbe)
                {
                    breakerOpened = TripBreaker_NoLock(isolated: error is IsolatedCircuitException);
                    pause = PauseOpens_NoLock((error as BrokenCircuitException)?.RetryAfter ?? settings.BreakDuration);
                }
            }
            else if (wasProbe && _breakerState == CircuitState.HalfOpen)
            {
                // The probe failed. The default pipeline's breaker has said so through OnOpened; a custom one cannot.
                breakerOpened = TripBreaker_NoLock(isolated: false);
                pause = PauseOpens_NoLock(settings.BreakDuration);
            }
            else if (_breakerState == CircuitState.Closed && !_opensPaused)
            {
                failures = ++_consecutiveOpenFailures;
                var backoff = settings.RetryBaseDelay * Math.Pow(2, Math.Min(failures - 1, 10));
                backoff = backoff < MinOpenBackoff ? MinOpenBackoff : backoff > MaxOpenBackoff ? MaxOpenBackoff : backoff;
                pause = PauseOpens_NoLock(backoff);
            }

            // Otherwise an open that began before the breaker opened is finishing late: the breaker has spoken already.

            // Its slot is free now. Unless paused, that may be exactly what a half-open breaker's probe was waiting for.
            opens = ReserveOpens_NoLock();
        }

        // Arm the resume before anyone is told: a caller released by the failure below may act at once, and the pool
        // must already be fully in its new state when it does.
        ArmResumeTimer(pause);
        if (breakerOpened)
        {
            FailWaitersWhileBreakerOpen(pause ?? TimeSpan.Zero);
        }

        if (failures > 0)
        {
            Log.OpensBackingOff(_logger, Name, pause ?? TimeSpan.Zero, failures);
        }

        StartOpens(opens);
    }

    /// <summary>Called by the default pipeline's circuit breaker when it opens.</summary>
    private void OnBreakerOpened(TimeSpan breakDuration)
    {
        bool breakerOpened;
        TimeSpan pause;
        using (_gate.Enter())
        {
            if (_disposed)
            {
                return;
            }

            breakerOpened = TripBreaker_NoLock(isolated: false);
            _refilling = true;
            pause = PauseOpens_NoLock(breakDuration);
        }

        ArmResumeTimer(pause);
        if (breakerOpened)
        {
            FailWaitersWhileBreakerOpen(breakDuration);
        }
    }

    /// <summary>Called by the default pipeline's circuit breaker when it closes.</summary>
    private void OnBreakerClosed()
    {
        var closed = false;
        using (_gate.Enter())
        {
            if (_breakerState != CircuitState.Closed)
            {
                _breakerState = CircuitState.Closed;
                _probeInFlight = false;
                closed = true;
            }
        }

        if (closed)
        {
            Log.BreakerClosed(_logger, Name);
        }
    }

    /// <summary>Marks the breaker open; returns whether it was not open already, so the caller fails waiters once.</summary>
    private bool TripBreaker_NoLock(bool isolated)
    {
        var wasOpen = _breakerState is CircuitState.Open or CircuitState.Isolated;
        _breakerState = isolated ? CircuitState.Isolated : CircuitState.Open;
        _probeInFlight = false;
        return !wasOpen;
    }

    /// <summary>
    /// Callers waiting on an empty pool would otherwise each sit out the full acquire timeout while the server is
    /// down. Fail them now, with the error that opened the breaker.
    /// </summary>
    private void FailWaitersWhileBreakerOpen(TimeSpan retryAfter)
    {
        List<PendingAcquire<TChannel>>? waiters = null;
        List<(int Ready, TaskCompletionSource Done)>? warmUps;
        ChannelPoolSnapshot snapshot;
        using (_gate.Enter())
        {
            if (_idle.Count == 0 && _waiters.Count > 0)
            {
                waiters = _waiters.DequeueAll();
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

    /// <summary>The resume timer: lifts a pause that is over, half-opening the breaker if it was open.</summary>
    private void ResumeOpens()
    {
        TimeSpan? early = null;
        var opens = 0;
        CircuitState breakerState;
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
                if (_breakerState is CircuitState.Open or CircuitState.Isolated)
                {
                    _breakerState = CircuitState.HalfOpen;
                }

                opens = ReserveOpens_NoLock();
            }

            breakerState = _breakerState;
        }

        if (early is { } wait)
        {
            Log.ResumeDeferred(_logger, Name, wait);
            ArmResumeTimer(early);
            return;
        }

        Log.OpensResumed(_logger, Name, breakerState, opens);
        StartOpens(opens);
    }

    private sealed record Probe(ChannelPool<TChannel> Pool, long Generation);
}
