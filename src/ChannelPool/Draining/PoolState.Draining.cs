namespace ChannelPool;

// Shutdown: the drain begins, leases still out at its end are evicted, and its progress is reported.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>
    /// The drain begins, once: the pool is disposed, idle channels are evicted, nobody joins a shared channel any more,
    /// and waiters and warm-ups stop waiting. Returns them to fail and close, or <see langword="null"/> with the
    /// existing drain's task when a drain already began.
    /// </summary>
    public DrainStart BeginDrain()
    {
        _gate.Enter();
        if (_drainTask is not null)
        {
            _gate.Exit();
            return new DrainStart(_drainTask, null, [], [], null, 0, Task.CompletedTask, Task.CompletedTask);
        }

        _disposed = true;
        _idleClosed = true;
        var drained = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _drainTask = drained.Task;
        _leasesReturned = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _quiescent = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        var idle = Resting.RemoveAll(static _ => true);
        idle.ForEach(MarkEvicted_NoLock);

        // A paused pool drains like any other; it stays "paused" in no sense that matters once disposed.
        _paused = false;
        _parked = null;
        _shared.StopSharing();
        var waiters = _waiters.DequeueAll();
        var warmUps = _warmUpWaiters;
        _warmUpWaiters = null;
        var start = new DrainStart(drained.Task, drained, idle, waiters, warmUps, _leasedCount, _leasesReturned.Task, _quiescent.Task);
        Exit(nameof(BeginDrain));
        return start;
    }

    /// <summary>
    /// Leased → evicted for every lease still out at the end of a drain. The idle queue was emptied when the drain
    /// began and nothing re-enters it, so an open channel not yet evicted is leased. Its leases go stale, so the
    /// holders' later releases do nothing.
    /// </summary>
    public List<PooledChannel<TChannel>> EvictOutstandingLeases()
    {
        _gate.Enter();
        List<PooledChannel<TChannel>> abandoned = [];
        foreach (var entry in _open)
        {
            if (!entry.IsEvicted)
            {
                SharedLeases<TChannel>.InvalidateLeases(entry);
                abandoned.Add(entry);
            }
        }

        abandoned.ForEach(EvictLeased_NoLock);
        Exit(nameof(EvictOutstandingLeases));
        return abandoned;
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

    /// <summary>
    /// What <see cref="BeginDrain"/> handed over: what to fail and close, and the tasks to wait on. Its
    /// <c>Drained</c> source completes the drain, and is <see langword="null"/> when a drain had already begun.
    /// </summary>
    internal sealed record DrainStart(
        Task Drain,
        TaskCompletionSource? Drained,
        List<PooledChannel<TChannel>> Idle,
        List<Waiter<TChannel>> Waiters,
        List<(int Ready, TaskCompletionSource Done)>? WarmUps,
        int Leased,
        Task LeasesReturned,
        Task Quiescent);
}
