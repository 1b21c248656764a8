namespace ChannelPool;

// Pause and resume: while paused nothing opens and no lease is handed out; idle channels rest, parked.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>Gets whether the pool is paused; read without the gate.</summary>
    public bool IsPaused => Volatile.Read(ref _paused);

    /// <summary>
    /// Idle → parked: the pool stops opening and leasing. Leases already out go on; released channels are parked too.
    /// Shared channels take no more leases. Waiting callers are handed back to be failed when
    /// <see cref="ChannelPoolOptions.AcquireWhilePaused"/> says fail; otherwise they wait on.
    /// </summary>
    /// <returns>Whether this call paused the pool (false: it already was), the callers to fail, and the counts.</returns>
    /// <exception cref="ObjectDisposedException">A drain began.</exception>
    public (bool Paused, List<Waiter<TChannel>>? Refused, ChannelPoolSnapshot Snapshot) Pause()
    {
        _gate.Enter();
        ThrowIfDisposed_NoLock("paused");
        if (_paused)
        {
            _gate.Exit();
            return (false, null, default);
        }

        _paused = true;
        _idleClosed = true;
        _parked = _idle;
        _idle = new IdleQueue<TChannel>(capacity: 1);
        _shared.StopSharing();
        var refused = _settings.AcquireWhilePaused == PausedAcquireMode.Fail && _waiters.Count > 0 ? _waiters.DequeueAll() : null;
        var snapshot = Snapshot_NoLock();
        Exit(nameof(Pause));
        return (true, refused, snapshot);
    }

    /// <summary>Copies out the parked channels, for the pool to check outside the gate before it resumes.</summary>
    /// <returns>The parked channels, or <see langword="null"/> when the pool is not paused.</returns>
    /// <exception cref="ObjectDisposedException">A drain began.</exception>
    public PooledChannel<TChannel>[]? ParkedChannels()
    {
        _gate.Enter();
        ThrowIfDisposed_NoLock("resumed");
        var parked = _parked?.ToArray();
        _gate.Exit();
        return parked;
    }

    /// <summary>
    /// Parked → idle, or leased by the callers who waited meanwhile, first come first served; parked channels
    /// <paramref name="unfit"/> picks (checked outside the gate: expired, unusable) are evicted instead. The pool refills.
    /// </summary>
    /// <returns>Whether this call resumed the pool (false: it was not paused), and what to do.</returns>
    /// <exception cref="ObjectDisposedException">A drain began.</exception>
    public ResumeOutcome Resume(Func<PooledChannel<TChannel>, bool> unfit)
    {
        _gate.Enter();
        ThrowIfDisposed_NoLock("resumed");
        if (!_paused)
        {
            _gate.Exit();
            return new ResumeOutcome(false, [], [], 0);
        }

        var evicted = _parked!.RemoveAll(unfit);
        evicted.ForEach(MarkEvicted_NoLock);
        _idle = _parked;
        _parked = null;
        _paused = false;
        _idleClosed = false;

        // The callers who waited through the pause come first, before anyone who calls from now on.
        var settings = _settings;
        List<(Waiter<TChannel> Waiter, PooledChannel<TChannel> Entry, int Slot)> handed = [];
        while (_waiters.Count > 0 && _idle.TryTake(settings.IdleOrder, out var entry))
        {
            _leasedCount++;
            Place_NoLock(entry, ChannelPlace.Leased);
            handed.Add((_waiters.Dequeue()!, entry, 0));
            if (entry.Shared is { } shared)
            {
                shared.LeaseFromIdle(sharing: ShareLimit_NoLock() > 1);
                _shared.Share(entry, ShareLimit_NoLock(), _waiters)?.ForEach(joiner => handed.Add((joiner.Waiter, entry, joiner.Slot)));
            }
        }

        var opens = Refill_NoLock(toPoolSize: true);
        Exit(nameof(Resume));
        return new ResumeOutcome(true, evicted, handed, opens);
    }

    /// <summary>What <see cref="Resume"/> decided: the parked channels to close, the waiters to hand a channel, opens.</summary>
    internal sealed record ResumeOutcome(
        bool Resumed,
        List<PooledChannel<TChannel>> Evicted,
        List<(Waiter<TChannel> Waiter, PooledChannel<TChannel> Entry, int Slot)> Handed,
        int Opens);
}
