namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    /// <summary>
    /// Marks a timestamp that was not taken because no listener wants the measurement. Not 0: a TimeProvider may
    /// legitimately return 0 (a fake clock starts there).
    /// </summary>
    internal const long NotMeasured = long.MinValue;

    /// <summary>
    /// Leases a channel. An idle channel is handed out at once; otherwise the caller waits, first come first served,
    /// for whichever comes first: a released channel or a newly opened one.
    /// </summary>
    /// <param name="cancellationToken">Cancels the wait.</param>
    /// <returns>A lease; dispose it to give the channel back.</returns>
    /// <exception cref="ChannelPoolTimeoutException">No channel became free within <see cref="ChannelPoolOptions.AcquireTimeout"/>.</exception>
    /// <exception cref="ChannelPoolUnavailableException">No channel is idle and the breaker stops the pool opening one.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled first.</exception>
    /// <exception cref="ObjectDisposedException">The pool was disposed.</exception>
    public ValueTask<ChannelLease<TChannel>> AcquireAsync(CancellationToken cancellationToken = default)
    {
        var waitStartedAt = _metrics.WaitTimeEnabled ? _timeProvider.GetTimestamp() : NotMeasured;
        return TryLeaseIdle(waitStartedAt, out var lease)
            ? new ValueTask<ChannelLease<TChannel>>(lease)
            : WaitAsync(waitStartedAt, cancellationToken);
    }

    /// <summary>
    /// Leases a channel, blocking the calling thread while it waits. For synchronous callers only; prefer
    /// <see cref="AcquireAsync"/>.
    /// </summary>
    /// <remarks>
    /// This is not sync-over-async: a blocked caller is woken directly by the thread that releases or opens the
    /// channel, so it never needs a thread-pool thread and cannot deadlock a starved thread pool.
    /// </remarks>
    /// <param name="cancellationToken">Cancels the wait.</param>
    /// <returns>A lease; dispose it to give the channel back.</returns>
    /// <exception cref="ChannelPoolTimeoutException">No channel became free within <see cref="ChannelPoolOptions.AcquireTimeout"/>.</exception>
    /// <exception cref="ChannelPoolUnavailableException">No channel is idle and the breaker stops the pool opening one.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled first.</exception>
    /// <exception cref="ObjectDisposedException">The pool was disposed.</exception>
    public ChannelLease<TChannel> Acquire(CancellationToken cancellationToken = default)
    {
        var waitStartedAt = _metrics.WaitTimeEnabled ? _timeProvider.GetTimestamp() : NotMeasured;
        if (TryLeaseIdle(waitStartedAt, out var lease))
        {
            return lease;
        }

        cancellationToken.ThrowIfCancellationRequested();
        var waiter = RentWaiter(blocking: true, waitStartedAt, cancellationToken);
        if (TryEnqueue(waiter, out lease))
        {
            waiter.Watch();
            return waiter.WaitBlocking();
        }

        return lease;
    }

    /// <summary>
    /// The hot path: join a shared channel with room, or take an idle channel, in the configured
    /// <see cref="IdleOrder"/>, that is still in date and usable.
    /// </summary>
    private bool TryLeaseIdle(long waitStartedAt, out ChannelLease<TChannel> lease)
    {
        while (true)
        {
            PooledChannel<TChannel>? entry;
            int slot;
            bool joined;
            var opens = 0;
            using (_gate.Enter())
            {
                if (!Lease_NoLock(out entry, out slot, out joined))
                {
                    lease = default;
                    return false;
                }

                if (RefillDue_NoLock())
                {
                    opens = Refill_NoLock();
                }
            }

            if (opens > 0)
            {
                StartOpens(opens);
            }

            if (joined)
            {
                // Other leases are using the channel, so only the factory's cheap verdict is asked: a call on it may
                // have failed since (the WCF adapter records that), and then no further lease may join it.
                if (IsUsable(entry))
                {
                    lease = BeginLease(entry, slot, waitStartedAt);
                    return true;
                }

                LeaveUnused(entry, slot, EvictionReason.Unusable);
                continue;
            }

            var reason = _clock.HasPassed(entry.ExpiresAt) ? EvictionReason.LifetimeExpired
                : !IsUsable(entry) ? EvictionReason.Unusable
                : (EvictionReason?)null;
            if (reason is null)
            {
                if (Volatile.Read(ref _settings).MaxLeasesPerChannel > 1)
                {
                    Share(entry);
                }

                lease = BeginLease(entry, slot, waitStartedAt);
                return true;
            }

            EvictLeased(entry, reason.Value);
        }
    }

    /// <summary>Lets a channel just leased from idle, and checked, take more leases: waiting callers' first.</summary>
    private void Share(PooledChannel<TChannel> entry)
    {
        List<(Waiter<TChannel> Waiter, int Slot)>? joiners;
        using (_gate.Enter())
        {
            joiners = Share_NoLock(entry);
        }

        CompleteJoiners(entry, joiners);
    }

    private void CompleteJoiners(PooledChannel<TChannel> entry, List<(Waiter<TChannel> Waiter, int Slot)>? joiners)
    {
        if (joiners is null)
        {
            return;
        }

        foreach (var (waiter, slot) in joiners)
        {
            waiter.Complete(BeginLease(entry, slot, waiter.WaitStartedAt));
        }
    }

    private ValueTask<ChannelLease<TChannel>> WaitAsync(long waitStartedAt, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled<ChannelLease<TChannel>>(cancellationToken);
        }

        var waiter = RentWaiter(blocking: false, waitStartedAt, cancellationToken);
        try
        {
            if (!TryEnqueue(waiter, out var lease))
            {
                return new ValueTask<ChannelLease<TChannel>>(lease);
            }
        }
        catch (Exception ex)
        {
            return ValueTask.FromException<ChannelLease<TChannel>>(ex);
        }

        waiter.Watch();
        return new ValueTask<ChannelLease<TChannel>>(waiter, waiter.Version);
    }

    private Waiter<TChannel> RentWaiter(bool blocking, long waitStartedAt, CancellationToken cancellationToken)
    {
        var waiter = _waiterPool.Get();
        waiter.Prepare(blocking, waitStartedAt, Volatile.Read(ref _settings).AcquireTimeout, _timeProvider, cancellationToken);
        return waiter;
    }

    /// <summary>
    /// Queues <paramref name="waiter"/>, or leases a channel that became idle since the fast path looked. Returns
    /// <see langword="false"/> with <paramref name="lease"/> set in the second case; throws when the caller must not wait.
    /// </summary>
    private bool TryEnqueue(Waiter<TChannel> waiter, out ChannelLease<TChannel> lease)
    {
        while (true)
        {
            Exception? refusal = null;
            var queued = false;
            var opens = 0;
            using (_gate.Enter())
            {
                if (_disposed)
                {
                    refusal = new ObjectDisposedException(GetType().FullName, $"Channel pool '{Name}' is disposed.");
                }
                else if (!CanLease_NoLock())
                {
                    if (RefusesWaiters_NoLock())
                    {
                        refusal = new ChannelPoolUnavailableException(Name, SnapshotNoLock(), RemainingPause_NoLock(), Volatile.Read(ref _lastOpenError));
                    }
                    else
                    {
                        // Queued under the same gate that release takes, so a channel released from here on finds us.
                        Wait_NoLock(waiter);
                        queued = true;
                        opens = Refill_NoLock();
                    }
                }
            }

            // Decided inside the gate, not read back from the waiter afterwards: by now a release may already have
            // handed this waiter a channel, and that lease must reach the caller through it.
            StartOpens(opens);
            if (queued)
            {
                lease = default;
                return true;
            }

            if (refusal is not null)
            {
                waiter.Recycle();
                throw refusal;
            }

            // A channel was released between the fast path and the gate: take it instead of waiting.
            if (TryLeaseIdle(waiter.WaitStartedAt, out lease))
            {
                waiter.Recycle();
                return false;
            }
        }
    }

    /// <summary>Takes a timed-out or cancelled waiter out of the queue, unless a channel already reached it.</summary>
    internal void AbandonWaiter(Waiter<TChannel> waiter, bool timedOut)
    {
        ChannelPoolSnapshot snapshot;
        Exception? lastOpenError;
        TimeSpan timeout;
        using (_gate.Enter())
        {
            if (!waiter.IsQueued)
            {
                return;
            }

            // Snapshot first, so the counts include the caller that is giving up.
            snapshot = SnapshotNoLock();
            Abandon_NoLock(waiter);
            lastOpenError = Volatile.Read(ref _lastOpenError);
            timeout = _settings.AcquireTimeout;
        }

        if (timedOut)
        {
            _metrics.Timeout();
            Log.AcquireTimedOut(_logger, Name, timeout, snapshot);
            waiter.Fail(new ChannelPoolTimeoutException(Name, timeout, snapshot, lastOpenError));
        }
        else
        {
            waiter.Fail(new OperationCanceledException(
                $"The wait for a channel from pool '{Name}' was cancelled.", innerException: null, waiter.CallerToken));
        }
    }

    internal void ReturnWaiter(Waiter<TChannel> waiter) => _waiterPool.Return(waiter);

    /// <summary>Starts the lease of <paramref name="slot"/>, which the caller already claimed under the gate.</summary>
    private ChannelLease<TChannel> BeginLease(PooledChannel<TChannel> entry, int slot, long waitStartedAt)
    {
        var startedAt = NotMeasured;
        var measureUse = _metrics.UseTimeEnabled;
        if (measureUse || waitStartedAt != NotMeasured)
        {
            var now = _timeProvider.GetTimestamp();
            if (waitStartedAt != NotMeasured)
            {
                _metrics.RecordWaitTime(_timeProvider.GetElapsedTime(waitStartedAt, now));
            }

            startedAt = measureUse ? now : NotMeasured;
        }

        // The slot is ours alone until we release it; its version was written under the gate when it was claimed or freed.
        ref var lease = ref entry.Slots[slot];
        lease.StartedAt = startedAt;
        return new ChannelLease<TChannel>(entry, slot, lease.Version);
    }

    /// <summary>
    /// Ends the lease <paramref name="version"/> of <paramref name="entry"/>'s <paramref name="slot"/>: hands the slot
    /// to the oldest waiter, frees it (the channel going back to idle when it was the last), or evicts the channel. A
    /// stale or repeated release does nothing.
    /// </summary>
    internal void Release(PooledChannel<TChannel> entry, int slot, int version)
    {
        // Judged before taking the gate, so the factory's IsUsable never runs inside it. For a stale release this
        // looks at a channel someone else may hold, which is harmless: the version check below then turns it away.
        var reason = ReasonToEvictAfterUse(entry);
        ref var lease = ref entry.Slots[slot];
        var leaseStartedAt = lease.StartedAt;
        Waiter<TChannel>? waiter = null;
        var evicted = false;
        var opens = 0;
        using (_gate.Enter())
        {
            // Of two racing releases of one lease, exactly one gets past here; a stale lease never does.
            if (lease.Version != version)
            {
                return;
            }

            lease.Version = version + 1;
            reason ??= entry.RetireReason;
            if (reason is null && !_disposed && _waiters.Count == 0)
            {
                // The common case: a healthy channel back to idle, or to its other leases.
                Release_NoLock(entry, slot);
            }
            else if (reason is null && !_disposed)
            {
                // Handed straight to the oldest waiter: the slot stays leased.
                waiter = HandOver_NoLock();
            }
            else
            {
                reason ??= EvictionReason.Shutdown;
                evicted = Leave_NoLock(entry, slot, reason.Value);
                if (evicted)
                {
                    opens = Refill_NoLock();
                    if (_disposed)
                    {
                        UpdateDrainProgress_NoLock();
                    }
                }
            }
        }

        if (leaseStartedAt != NotMeasured)
        {
            _metrics.RecordUseTime(_timeProvider.GetElapsedTime(leaseStartedAt));
        }

        if (waiter is not null)
        {
            waiter.Complete(BeginLease(entry, slot, waiter.WaitStartedAt));
        }
        else if (evicted)
        {
            QueueClose(entry, reason!.Value);
        }

        if (opens > 0)
        {
            StartOpens(opens);
        }
    }

    private EvictionReason? ReasonToEvictAfterUse(PooledChannel<TChannel> entry) =>
        entry.IsBroken ? EvictionReason.Broken
        : !IsUsable(entry) ? EvictionReason.Unusable
        : Volatile.Read(ref _settings).LeaseMode == LeaseMode.SingleUse ? EvictionReason.SingleUse
        : _clock.HasPassed(entry.ExpiresAt) ? EvictionReason.LifetimeExpired
        : null;

    /// <summary>Gives back a slot the fast path claimed on a shared channel but found unusable, retiring the channel.</summary>
    private void LeaveUnused(PooledChannel<TChannel> entry, int slot, EvictionReason reason)
    {
        var opens = 0;
        bool evicted;
        using (_gate.Enter())
        {
            evicted = Leave_NoLock(entry, slot, reason);
            if (evicted)
            {
                opens = Refill_NoLock();
                if (_disposed)
                {
                    UpdateDrainProgress_NoLock();
                }
            }
        }

        if (evicted)
        {
            QueueClose(entry, reason);
        }

        StartOpens(opens);
    }

    /// <summary>Evicts a channel the fast path took out of the idle set but found expired or unusable.</summary>
    private void EvictLeased(PooledChannel<TChannel> entry, EvictionReason reason)
    {
        int opens;
        using (_gate.Enter())
        {
            EvictLeased_NoLock(entry);
            opens = Refill_NoLock();
        }

        QueueClose(entry, reason);
        StartOpens(opens);
    }
}
