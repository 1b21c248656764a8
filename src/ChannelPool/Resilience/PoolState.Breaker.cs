namespace ChannelPool;

// Following the open pipeline's breaker: pausing opens, failing waiters fast, resuming.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>
    /// The breaker opened: opens pause for <paramref name="breakDuration"/>, and the fill resumes after it. Returns the
    /// pause to arm the resume timer with, or <see langword="null"/> when a drain began.
    /// </summary>
    public TimeSpan? BreakerOpened(TimeSpan breakDuration)
    {
        _gate.Enter();
        if (_disposed)
        {
            _gate.Exit();
            return null;
        }

        var pause = PauseOpens_NoLock(breakDuration);

        // Nothing starts while paused; this only marks the fill that resumes after the break.
        _ = Refill_NoLock(toPoolSize: true);
        Exit(nameof(BreakerOpened));
        return pause;
    }

    /// <summary>
    /// Waiting callers (when nothing is idle) and pending warm-ups stop waiting, to be failed fast while the breaker
    /// stops opens, rather than each sitting out its timeout. Returns them with the counts to report.
    /// </summary>
    public (List<Waiter<TChannel>>? Waiters, List<(int Ready, TaskCompletionSource Done)>? WarmUps, ChannelPoolSnapshot Snapshot) TakeWaitersRefusedByBreaker()
    {
        _gate.Enter();
        var waiters = _idle.Count == 0 && _waiters.Count > 0 ? _waiters.DequeueAll() : null;
        var warmUps = _warmUpWaiters;
        _warmUpWaiters = null;
        var snapshot = Snapshot_NoLock();
        Exit(nameof(TakeWaitersRefusedByBreaker));
        return (waiters, warmUps, snapshot);
    }

    /// <summary>
    /// The resume timer fired: lifts a pause that is over and refills. If the breaker is open, the next open reaches
    /// Polly after the break, and Polly half-opens and lets it through as its probe.
    /// </summary>
    /// <returns>What happened: nothing to do, resumed with opens to start, or the pause runs on for a while yet.</returns>
    public (bool Resumed, int Opens, TimeSpan? RunsOnFor) ResumeOpens()
    {
        _gate.Enter();
        if (_disposed || !_opensPaused)
        {
            _gate.Exit();
            return (false, 0, null);
        }

        // A later pause may have pushed the resume time out after this timer was armed.
        if (RemainingPause_NoLock() is { } remaining && remaining > TimeSpan.Zero)
        {
            _gate.Exit();
            return (false, 0, remaining);
        }

        _opensPaused = false;
        var opens = Refill_NoLock();
        Exit(nameof(ResumeOpens));
        return (true, opens, null);
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
}
