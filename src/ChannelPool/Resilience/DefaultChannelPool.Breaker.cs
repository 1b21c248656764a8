namespace ChannelPool;

/// <summary>
/// How the pool follows its open pipeline's circuit breaker. Polly owns the breaker: its state, when it half-opens and
/// which open is its probe. The pool only reacts: it pauses opens for the break, fails waiting callers fast, sends
/// one open at a time while the breaker is not closed, and backs off between failed opens the breaker let through.
/// <see cref="PoolState{TChannel}"/> decides each of these; this file acts on its decisions.
/// </summary>
public sealed partial class DefaultChannelPool<TChannel>
{
    /// <summary>Called by the default pipeline's circuit breaker when its probe succeeded.</summary>
    private void OnBreakerClosed() => Log.BreakerClosed(_logger, Name);

    private void OnOpenFailed(Exception error)
    {
        var outcome = _state.OpenFailed(error);

        // Arm the resume before anyone is told: a caller released by the failure below may act at once, and the pool
        // must already be fully in its new state when it does.
        ArmResumeTimer(outcome.Pause);
        if (outcome.TurnedAway)
        {
            FailWaitersWhileBreakerOpen(outcome.Pause ?? TimeSpan.Zero);
        }

        if (outcome.Failures > 0)
        {
            Log.OpensBackingOff(_logger, Name, outcome.Pause ?? TimeSpan.Zero, outcome.Failures);
        }

        StartOpens(outcome.Opens);
    }

    /// <summary>Called by the default pipeline's circuit breaker when it opens, before the failed open returns.</summary>
    private void OnBreakerOpened(TimeSpan breakDuration)
    {
        _endpoint?.BreakerOpened();
        if (_state.BreakerOpened(breakDuration) is { } pause)
        {
            ArmResumeTimer(pause);
            FailWaitersWhileBreakerOpen(breakDuration);
        }
    }

    /// <summary>
    /// Callers waiting on an empty pool would otherwise each sit out the full acquire timeout while the server is
    /// down. Fail them now, with the error that opened the breaker.
    /// </summary>
    private void FailWaitersWhileBreakerOpen(TimeSpan retryAfter)
    {
        var (waiters, warmUps, snapshot) = _state.TakeWaitersRefusedByBreaker();
        var lastError = Volatile.Read(ref _lastOpenError);
        Log.BreakerOpened(_logger, Name, retryAfter, lastError);
        waiters?.ForEach(waiter => waiter.Fail(new ChannelPoolUnavailableException(Name, snapshot, retryAfter, lastError)));
        warmUps?.ForEach(warmUp => warmUp.Done.TrySetException(new ChannelPoolUnavailableException(Name, snapshot, retryAfter, lastError)));
    }

    // Timers are armed outside the gate: a TimeProvider may run a due callback on the calling thread.
    private void ArmResumeTimer(TimeSpan? delay)
    {
        if (delay is { } due && !_state.IsDisposed)
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

    /// <summary>The resume timer: lifts a pause that is over, or re-arms for what is left of a longer one.</summary>
    private void ResumeOpens()
    {
        var (resumed, opens, runsOnFor) = _state.ResumeOpens();
        if (runsOnFor is { } wait)
        {
            Log.ResumeDeferred(_logger, Name, wait);
            ArmResumeTimer(wait);
        }
        else if (resumed)
        {
            Log.OpensResumed(_logger, Name, _state.BreakerState, opens);
            StartOpens(opens);
        }
    }
}
