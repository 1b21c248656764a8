namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    // Guarded by _gate; created when the drain starts.
    private Task? _drainTask;
    private TaskCompletionSource? _leasesReturned;
    private TaskCompletionSource? _quiescent;

    /// <summary>
    /// Shuts the pool down: fails waiting callers, closes idle channels gracefully, waits up to
    /// <see cref="ChannelPoolOptions.DrainTimeout"/> for leases to come back (closing each as it does), then aborts
    /// the rest. Calling it again returns the same drain.
    /// </summary>
    /// <param name="cancellationToken">
    /// Cuts the waiting short: leased channels are aborted at once, and graceful closes already under way finish in the
    /// background, each within <see cref="ChannelPoolOptions.CloseTimeout"/>.
    /// </param>
    /// <returns>A task that completes when every channel the pool opened is closed or aborted.</returns>
    public Task DrainAsync(CancellationToken cancellationToken = default)
    {
        List<PooledChannel<TChannel>> idle;
        List<Waiter<TChannel>> waiters;
        List<(int Ready, TaskCompletionSource Done)>? warmUps;
        int leased;
        TaskCompletionSource drained;
        using (_gate.Enter())
        {
            if (_drainTask is not null)
            {
                return _drainTask;
            }

            _disposed = true;
            drained = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _drainTask = drained.Task;
            _leasesReturned = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _quiescent = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

            idle = EvictIdle_NoLock();
            StopSharing_NoLock();
            waiters = AbandonAll_NoLock();
            warmUps = _warmUpWaiters;
            _warmUpWaiters = null;
            leased = _leasedCount;
            UpdateDrainProgress_NoLock();
        }

        _ = DrainCoreAsync(drained, idle, waiters, warmUps, leased, cancellationToken);
        return drained.Task;
    }

    /// <summary>Drains the pool (see <see cref="DrainAsync"/>).</summary>
    /// <returns>A task that completes when the drain is done.</returns>
    public ValueTask DisposeAsync() => new(DrainAsync());

    /// <summary>Drains the pool (see <see cref="DrainAsync"/>), blocking until it is done. Prefer <see cref="DisposeAsync"/>.</summary>
    public void Dispose()
    {
        // A deliberate block, for containers and callers that can only dispose synchronously. The drain needs nothing
        // from this thread: it continues on timers and the pool's worker, and its awaits do not capture a context.
        DrainAsync().GetAwaiter().GetResult();
    }

    private async Task DrainCoreAsync(
        TaskCompletionSource drained,
        List<PooledChannel<TChannel>> idle,
        List<Waiter<TChannel>> waiters,
        List<(int Ready, TaskCompletionSource Done)>? warmUps,
        int leased,
        CancellationToken cancellationToken)
    {
        try
        {
            var settings = Volatile.Read(ref _settings);
            Log.DrainStarted(_logger, Name, idle.Count, leased, settings.DrainTimeout);
            _cleanupTimer.Dispose();
            _resumeTimer.Dispose();
            _clock.Dispose();
            await _shutdown.CancelAsync().ConfigureAwait(false);

            foreach (var waiter in waiters)
            {
                waiter.Fail(new ObjectDisposedException(GetType().FullName, $"Channel pool '{Name}' was disposed while this caller waited for a channel."));
            }

            warmUps?.ForEach(warmUp => warmUp.Done.TrySetException(new ObjectDisposedException(GetType().FullName, $"Channel pool '{Name}' was disposed during warm-up.")));
            foreach (var entry in idle)
            {
                QueueClose(entry, EvictionReason.Shutdown);
            }

            if (!await WaitBoundedAsync(_leasesReturned!.Task, settings.DrainTimeout, cancellationToken).ConfigureAwait(false))
            {
                AbortOutstandingLeases();
            }

            // Closes carry their own timeout and opens were cancelled; still, a factory that ignores both must not hang
            // shutdown, and neither may a host whose shutdown time is up. Whatever finishes later is closed or aborted
            // as it lands, because the pool is disposed.
            if (!await WaitBoundedAsync(_quiescent!.Task, settings.CloseTimeout, cancellationToken).ConfigureAwait(false))
            {
                var snapshot = GetSnapshot();
                Log.DrainLeftWorkInFlight(_logger, Name, snapshot.Opening, snapshot.Closing);
            }

            var final = GetSnapshot();
            Log.DrainCompleted(_logger, Name, final.TotalOpened, final.TotalClosed);
        }
        finally
        {
            _metrics.Dispose();
            drained.TrySetResult();
        }
    }

    /// <summary>Aborts channels whose holders did not release them in time; their later release does nothing.</summary>
    private void AbortOutstandingLeases()
    {
        List<PooledChannel<TChannel>> abandoned;
        using (_gate.Enter())
        {
            abandoned = EvictOutstandingLeases_NoLock();
            UpdateDrainProgress_NoLock();
        }

        if (abandoned.Count > 0)
        {
            Log.LeasesAbortedAtDrain(_logger, Name, abandoned.Count);
        }

        // Aborted here and now, not queued: the holder may be mid-call, so a graceful close is wrong, and a drain cut
        // short must still leave none of these open when it returns.
        foreach (var entry in abandoned)
        {
            RecordEviction(entry, EvictionReason.Shutdown);
            Abort(entry);
            OnChannelEnded(entry);
        }
    }

    private void UpdateDrainProgress_NoLock()
    {
        if (_leasedCount == 0)
        {
            _leasesReturned?.TrySetResult();
            if (_openingCount == 0 && _evictedCount == 0)
            {
                _quiescent?.TrySetResult();
            }
        }
    }

    private async Task<bool> WaitBoundedAsync(Task task, TimeSpan timeout, CancellationToken cancellationToken)
    {
        try
        {
            await task.WaitAsync(timeout, _timeProvider, cancellationToken).ConfigureAwait(false);
            return true;
        }
        catch (TimeoutException)
        {
            return false;
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            return false;
        }
    }
}
