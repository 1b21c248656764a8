using Polly.CircuitBreaker;

namespace ChannelPool;

// Opening: warm-up, and what an open that finished or failed changes.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>
    /// Starts filling to PoolSize whatever the threshold says; an adaptive target rises to PoolSize for a window. Returns
    /// opens to start, and a task to wait on when fewer than <paramref name="readyChannels"/> channels are open.
    /// </summary>
    /// <exception cref="ObjectDisposedException">A drain began.</exception>
    public (int Opens, TaskCompletionSource? Done) WarmUp(int readyChannels)
    {
        _gate.Enter();
        if (_disposed)
        {
            _gate.Exit();
            throw new ObjectDisposedException(typeof(DefaultChannelPool<TChannel>).FullName, $"Channel pool '{_poolName}' is disposed.");
        }

        if (_adaptiveTarget is { } adaptive)
        {
            SetIdleTarget_NoLock(adaptive.RaiseTo(_settings.PoolSize));
        }

        var opens = Refill_NoLock(toPoolSize: true);
        TaskCompletionSource? done = null;
        if (Resting.Count + _leasedCount < readyChannels)
        {
            done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            (_warmUpWaiters ??= []).Add((readyChannels, done));
        }

        Exit(nameof(WarmUp));
        return (opens, done);
    }

    /// <summary>
    /// Opening → idle; or leased by the oldest waiter (and, on a channel that takes several leases, by as many more
    /// waiters as it can take); parked, while paused; or evicted, when a drain began or a clear came after the open
    /// began. The server answered, so the backoff ends.
    /// </summary>
    /// <param name="entry">The channel.</param>
    /// <param name="openTime">How long the open took across its attempts, for the adaptive target.</param>
    public OpenedOutcome Opened(PooledChannel<TChannel> entry, TimeSpan openTime)
    {
        _gate.Enter();
        _adaptiveTarget?.RecordOpenTime(openTime);
        _lastBreakerVerdict = BreakerState.Closed;
        if (BreakerState == BreakerState.Closed)
        {
            _consecutiveOpenFailures = 0;
            _opensPaused = false;
        }

        _openingCount--;
        _openedTotal++;
        _open.Add(entry);
        var cleared = entry.Generation < _generation;
        if (cleared)
        {
            _retiredOpen++;
        }

        if (_disposed || cleared)
        {
            // A channel retired as it lands is like a failed open: the fill it was part of goes on.
            MarkEvicted_NoLock(entry);
            var replacements = _disposed ? 0 : Refill_NoLock(toPoolSize: true);
            Exit(nameof(Opened));
            return new OpenedOutcome(_disposed ? EvictionReason.Shutdown : EvictionReason.Cleared, null, null, null, replacements);
        }

        PlaceDeadline_NoLock(entry);
        if (_paused)
        {
            EnterIdle_NoLock(entry);
            var ready = TakeFinishedWarmUps_NoLock();
            Exit(nameof(Opened));
            return new OpenedOutcome(null, null, null, ready, 0);
        }

        var waiter = _waiters.Dequeue();
        List<(Waiter<TChannel> Waiter, int Slot)>? joiners = null;
        if (waiter is null)
        {
            EnterIdle_NoLock(entry);
        }
        else
        {
            _leasedCount++;
            Place_NoLock(entry, ChannelPlace.Leased);
            if (entry.Shared is { } shared)
            {
                shared.LeaseFromIdle(sharing: ShareLimit_NoLock() > 1);
                joiners = _shared.Share(entry, ShareLimit_NoLock(), _waiters);
            }
        }

        // While callers still wait, a channel handed to one of them is not replaced: the opens in flight were counted for
        // the waiters first (Refill_NoLock), and a waiter served now may hand its channel on to the next. Only waiters the
        // opens in flight cannot serve get more. Serving the last waiter refills as usual.
        var warmedUp = TakeFinishedWarmUps_NoLock();
        var opens = waiter is null || _waiters.Count == 0 ? Refill_NoLock() : ReserveOpens_NoLock(_waiters.Count - _openingCount);
        Exit(nameof(Opened));
        return new OpenedOutcome(null, waiter, joiners, warmedUp, opens);
    }

    /// <summary>
    /// Opening → nothing. Turned away by the breaker, opens pause for the break it names; given up on by the pipeline
    /// while the breaker stays closed, they pause with exponential backoff. Either way the refill keeps going once
    /// opens resume.
    /// </summary>
    public OpenFailedOutcome OpenFailed(Exception error)
    {
        _gate.Enter();
        _openingCount--;
        if (_disposed)
        {
            Exit(nameof(OpenFailed));
            return default;
        }

        TimeSpan? pause = null;
        var turnedAway = false;
        var failures = 0;
        if (error is BrokenCircuitException or IsolatedCircuitException)
        {
            turnedAway = true;
            _lastBreakerVerdict = error is IsolatedCircuitException ? BreakerState.Isolated : BreakerState.Open;
            pause = PauseOpens_NoLock((error as BrokenCircuitException)?.RetryAfter ?? _settings.BreakDuration);
        }
        else if (!_opensPaused && BreakerState == BreakerState.Closed)
        {
            // Without a pause the refill would start the next open at once, in a tight loop, for as long as the
            // breaker's minimum throughput is not reached.
            failures = ++_consecutiveOpenFailures;
            var backoff = _settings.RetryBaseDelay * Math.Pow(2, Math.Min(failures - 1, 10));
            backoff = backoff < MinOpenBackoff ? MinOpenBackoff : backoff > MaxOpenBackoff ? MaxOpenBackoff : backoff;
            pause = PauseOpens_NoLock(backoff);
        }

        var opens = Refill_NoLock(toPoolSize: true);
        Exit(nameof(OpenFailed));
        return new OpenFailedOutcome(pause, turnedAway, failures, opens);
    }

    private List<TaskCompletionSource>? TakeFinishedWarmUps_NoLock()
    {
        if (_warmUpWaiters is null)
        {
            return null;
        }

        var open = Resting.Count + _leasedCount;
        List<TaskCompletionSource>? finished = null;
        _warmUpWaiters.RemoveAll(warmUp =>
        {
            if (warmUp.Ready > open)
            {
                return false;
            }

            (finished ??= []).Add(warmUp.Done);
            return true;
        });
        return finished;
    }

    /// <summary>
    /// What <see cref="Opened"/> decided: why the channel is evicted at once, if it is; the waiter and joiners to
    /// complete; warm-ups that are done; opens.
    /// </summary>
    internal readonly record struct OpenedOutcome(
        EvictionReason? Evicted,
        Waiter<TChannel>? Waiter,
        List<(Waiter<TChannel> Waiter, int Slot)>? Joiners,
        List<TaskCompletionSource>? WarmedUp,
        int Opens);
}

// What <see cref="PoolState{TChannel}.OpenFailed"/> decided: a pause to arm, whether waiters are failed fast, and opens.
internal readonly record struct OpenFailedOutcome(TimeSpan? Pause, bool TurnedAway, int Failures, int Opens);
