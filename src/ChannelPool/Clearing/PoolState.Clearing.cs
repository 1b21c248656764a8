namespace ChannelPool;

// Clearing (soft evict): every channel opened so far retires, and the pool refills with new ones.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>
    /// Every channel whose open began before now retires: idle → evicted at once, leased ones when their lease ends
    /// (<see cref="PooledChannel{TChannel}.Retire"/>), opens in flight as they land (<see cref="Opened"/>). A shared
    /// channel takes no more leases. The pool refills to its idle target with new opens.
    /// </summary>
    /// <returns>The idle channels to close, opens to start, and a task that completes when every retired channel has closed.</returns>
    /// <exception cref="ObjectDisposedException">A drain began.</exception>
    public ClearOutcome Clear()
    {
        _gate.Enter();
        ThrowIfDisposed_NoLock("cleared");
        var outcome = Clear_NoLock(waitable: true);
        Exit(nameof(Clear));
        return outcome;
    }

    /// <summary>
    /// The clear an error the fatal-error rule recognised asks for: every channel whose open began no later than the one
    /// that failed (<paramref name="generation"/>) retires. Once per wave of fatal errors: nothing happens when a clear
    /// since then already retired them (old channels failing one after another), nor while no call has succeeded since
    /// the last fatal clear (a sustained failure, such as a rotated certificate the client does not trust, fails the new
    /// channels too, and clearing them again would only churn). A healthy release ends the wave (<see cref="Release"/>).
    /// </summary>
    /// <returns>What <see cref="Clear"/> returns, or <see langword="null"/> when there was nothing left to clear.</returns>
    public ClearOutcome? ClearAfterFatalError(long generation)
    {
        _gate.Enter();
        if (_disposed || generation < _generation || _fatalWave)
        {
            _gate.Exit();
            return null;
        }

        _fatalWave = true;
        var outcome = Clear_NoLock(waitable: false);
        Exit(nameof(ClearAfterFatalError));
        return outcome;
    }

    private ClearOutcome Clear_NoLock(bool waitable)
    {
        _generation++;
        var idle = Resting.RemoveAll(static _ => true);
        idle.ForEach(MarkEvicted_NoLock);
        _shared.RetireAll(EvictionReason.Cleared);
        foreach (var entry in _open)
        {
            entry.Retire();
        }

        // Every channel still open belongs to an earlier generation now.
        _retiredOpen = _open.Count;
        Task done = Task.CompletedTask;
        if (waitable && _retiredOpen > 0)
        {
            var waiter = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            (_clearWaiters ??= []).Add(waiter);
            done = waiter.Task;
        }

        // Replace what was retired, and serve whoever waits. A pool with nothing open, opening or waited for (nobody has
        // used it yet, or it rests at zero) is not warmed by a clear: the refill's threshold alone would have filled it.
        var leased = _leasedCount;
        var opens = _retiredOpen > 0 || _openingCount > 0 || _waiters.Count > 0 ? Refill_NoLock(toPoolSize: true) : 0;
        return new ClearOutcome(idle, leased, opens, done);
    }

    /// <summary>What a clear decided: the idle channels to close, how many leased ones retire later, opens, and its end.</summary>
    internal sealed record ClearOutcome(List<PooledChannel<TChannel>> Idle, int Leased, int Opens, Task Done);
}
