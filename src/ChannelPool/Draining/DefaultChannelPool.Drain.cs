namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
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
        var start = _state.BeginDrain();
        if (start.Drained is not null)
        {
            _ = DrainCoreAsync(start, cancellationToken);
        }

        return start.Drain;
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

    private async Task DrainCoreAsync(PoolState<TChannel>.DrainStart start, CancellationToken cancellationToken)
    {
        try
        {
            var settings = _state.Settings;
            Log.DrainStarted(_logger, Name, start.Idle.Count, start.Leased, settings.DrainTimeout);
            _cleanupTimer.Dispose();
            _expiryTimer.Dispose();
            _resumeTimer.Dispose();
            _leakTimer.Dispose();
            _idleTargetTimer.Dispose();
            _renewTimer?.Dispose();
            _clock.Dispose();
            await _shutdown.CancelAsync().ConfigureAwait(false);

            foreach (var waiter in start.Waiters)
            {
                waiter.Fail(new ObjectDisposedException(GetType().FullName, $"Channel pool '{Name}' was disposed while this caller waited for a channel."));
            }

            start.WarmUps?.ForEach(warmUp => warmUp.Done.TrySetException(new ObjectDisposedException(GetType().FullName, $"Channel pool '{Name}' was disposed during warm-up.")));
            foreach (var entry in start.Idle)
            {
                QueueClose(entry, EvictionReason.Shutdown);
            }

            if (!await WaitBoundedAsync(start.LeasesReturned, settings.DrainTimeout, cancellationToken).ConfigureAwait(false))
            {
                AbortOutstandingLeases();
            }

            // Closes carry their own timeout and opens were cancelled; still, a factory that ignores both must not hang
            // shutdown, and neither may a host whose shutdown time is up. Whatever finishes later is closed or aborted
            // as it lands, because the pool is disposed.
            if (!await WaitBoundedAsync(start.Quiescent, settings.CloseTimeout, cancellationToken).ConfigureAwait(false))
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
            start.Drained!.TrySetResult();
        }
    }

    /// <summary>Aborts channels whose holders did not release them in time; their later release does nothing.</summary>
    private void AbortOutstandingLeases()
    {
        var abandoned = _state.EvictOutstandingLeases();
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
