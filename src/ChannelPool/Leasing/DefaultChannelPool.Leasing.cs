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
    /// <exception cref="ChannelPoolUnavailableException">
    /// No channel is idle and the breaker stops the pool opening one; or the pool is paused (<see cref="Pause"/>) and
    /// <see cref="ChannelPoolOptions.AcquireWhilePaused"/> is <see cref="PausedAcquireMode.Fail"/>, the default.
    /// </exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled first.</exception>
    /// <exception cref="ObjectDisposedException">The pool was disposed.</exception>
    public ValueTask<ChannelLease<TChannel>> AcquireAsync(CancellationToken cancellationToken = default)
    {
        var waitStartedAt = _metrics.WaitTimeEnabled ? _timeProvider.GetTimestamp() : NotMeasured;
        var lease = TryLeaseIdle(waitStartedAt);
        return lease.IsAcquired
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
    /// <exception cref="ChannelPoolUnavailableException">
    /// No channel is idle and the breaker stops the pool opening one; or the pool is paused (<see cref="Pause"/>) and
    /// <see cref="ChannelPoolOptions.AcquireWhilePaused"/> is <see cref="PausedAcquireMode.Fail"/>, the default.
    /// </exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled first.</exception>
    /// <exception cref="ObjectDisposedException">The pool was disposed.</exception>
    public ChannelLease<TChannel> Acquire(CancellationToken cancellationToken = default)
    {
        var waitStartedAt = _metrics.WaitTimeEnabled ? _timeProvider.GetTimestamp() : NotMeasured;
        var lease = TryLeaseIdle(waitStartedAt);
        return lease.IsAcquired ? lease : Wait(waitStartedAt, cancellationToken);
    }

    /// <summary>
    /// The hot path: join a shared channel with room, or take an idle channel, in the configured
    /// <see cref="IdleOrder"/>, that is still in date and usable. Returns <c>default</c> when nothing is free.
    /// </summary>
    /// <remarks>
    /// By value, not through an out parameter: a lease is one field per register (see <see cref="ChannelLease{TChannel}"/>),
    /// so it stays in registers up to the <see cref="ValueTask{TResult}"/>; an out parameter may point into the heap,
    /// so storing the entry through it cost every lease a checked write barrier.
    /// </remarks>
    private ChannelLease<TChannel> TryLeaseIdle(long waitStartedAt)
    {
        while (true)
        {
            var claim = _state.TryLease();
            if (claim.Entry is not { } entry)
            {
                return default;
            }

            StartOpens(claim.Opens);
            if (claim.Kind == LeaseKind.Joined)
            {
                // Other leases are using the channel, so only the factory's cheap verdict is asked: a call on it may
                // have failed since (the WCF adapter records that), and then no further lease may join it.
                if (IsUsable(entry))
                {
                    return BeginLease(entry, claim.Slot, waitStartedAt);
                }

                LeaveUnused(entry, claim.Slot, EvictionReason.Unusable);
                continue;
            }

            var reason = entry.EvictAfter <= _clock.Now ? entry.ExpiredReason
                : !IsUsable(entry) ? EvictionReason.Unusable
                : (EvictionReason?)null;
            if (reason is null)
            {
                if (claim.Kind == LeaseKind.IdleShareable)
                {
                    CompleteJoiners(entry, _state.Share(entry));
                }

                return BeginLease(entry, slot: 0, waitStartedAt);
            }

            var opens = _state.EvictLeased(entry);
            QueueClose(entry, reason.Value);
            StartOpens(opens);
        }
    }

    private void CompleteJoiners(PooledChannel<TChannel> entry, List<(Waiter<TChannel> Waiter, int Slot)>? joiners)
    {
        if (joiners is null)
        {
            return;
        }

        foreach (var (waiter, slot) in joiners)
        {
            CompleteWaiter(waiter, entry, slot);
        }
    }

    /// <summary>Hands a waiter the slot the state gave it: the lease starts on its behalf, with its wait and its stack.</summary>
    private void CompleteWaiter(Waiter<TChannel> waiter, PooledChannel<TChannel> entry, int slot) =>
        waiter.Complete(BeginLease(entry, slot, waiter.WaitStartedAt, waiter.AcquiredAt));

    // Out of line, as WaitAsync is: the out parameter would otherwise pin Acquire's lease in memory.
    private ChannelLease<TChannel> Wait(long waitStartedAt, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        var waiter = RentWaiter(blocking: true, waitStartedAt, cancellationToken);
        if (TryEnqueue(waiter, out var lease))
        {
            waiter.Watch();
            return waiter.WaitBlocking();
        }

        return lease;
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
        waiter.Prepare(blocking, waitStartedAt, _state.Settings.AcquireTimeout, _timeProvider, CaptureAcquiringStack(), cancellationToken);
        return waiter;
    }

    /// <summary>
    /// Queues <paramref name="waiter"/>, or leases a channel that became free since the fast path looked. Returns
    /// <see langword="false"/> with <paramref name="lease"/> set in the second case; throws when the caller must not wait.
    /// </summary>
    private bool TryEnqueue(Waiter<TChannel> waiter, out ChannelLease<TChannel> lease)
    {
        while (true)
        {
            // Decided inside the gate, not read back from the waiter afterwards: by now a release may already have
            // handed this waiter a channel, and that lease must reach the caller through it.
            var outcome = _state.Enqueue(waiter);
            StartOpens(outcome.Opens);
            switch (outcome.Kind)
            {
                case EnqueueKind.Queued:
                    lease = default;
                    return true;
                case EnqueueKind.Disposed:
                    waiter.Recycle();
                    throw new ObjectDisposedException(GetType().FullName, $"Channel pool '{Name}' is disposed.");
                case EnqueueKind.Refused:
                    waiter.Recycle();
                    throw new ChannelPoolUnavailableException(Name, outcome.Snapshot, outcome.RetryAfter, Volatile.Read(ref _lastOpenError));
                case EnqueueKind.Paused:
                    waiter.Recycle();
                    throw new ChannelPoolUnavailableException(Name, outcome.Snapshot);
            }

            // A channel was released between the fast path and the gate: take it instead of waiting.
            lease = TryLeaseIdle(waiter.WaitStartedAt);
            if (lease.IsAcquired)
            {
                waiter.Recycle();
                return false;
            }
        }
    }

    /// <summary>Takes a timed-out or cancelled waiter out of the queue, unless a channel already reached it.</summary>
    internal void AbandonWaiter(Waiter<TChannel> waiter, bool timedOut)
    {
        if (_state.Abandon(waiter) is not var (snapshot, timeout))
        {
            return;
        }

        if (timedOut)
        {
            _metrics.Timeout();
            Log.AcquireTimedOut(_logger, Name, timeout, snapshot);
            waiter.Fail(new ChannelPoolTimeoutException(Name, timeout, snapshot, Volatile.Read(ref _lastOpenError)));
        }
        else
        {
            waiter.Fail(new OperationCanceledException(
                $"The wait for a channel from pool '{Name}' was cancelled.", innerException: null, waiter.CallerToken));
        }
    }

    internal void ReturnWaiter(Waiter<TChannel> waiter) => _waiterPool.Return(waiter);

    /// <summary>
    /// Starts the lease of <paramref name="slot"/>, which the state already claimed under its gate. With leak detection
    /// on, the lease is watched, with <paramref name="acquiredAt"/> (a waiter's stack) or the calling thread's own.
    /// </summary>
    private ChannelLease<TChannel> BeginLease(PooledChannel<TChannel> entry, int slot, long waitStartedAt, System.Diagnostics.StackTrace? acquiredAt = null)
    {
        // The slot is ours alone until we release it; its version was written under the gate when it was claimed or freed.
        ref var lease = ref entry.SlotAt(slot);
        if (waitStartedAt != NotMeasured || _metrics.UseTimeEnabled || _leakThreshold != 0 || _sampleLeases || _endpoint is not null)
        {
            StartMeasured(ref lease, waitStartedAt, acquiredAt);
        }
        else
        {
            lease.StartedAt = NotMeasured;
        }

        return new ChannelLease<TChannel>(entry, slot, lease.Version);
    }

    /// <summary>
    /// Starts a lease that is timed (wait or use time) or watched (leak detection); out of line, as
    /// <see cref="ReleaseMeasured"/> is, so the common lease computes none of it.
    /// </summary>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private void StartMeasured(ref PooledChannel<TChannel>.LeaseSlot lease, long waitStartedAt, System.Diagnostics.StackTrace? acquiredAt)
    {
        var now = _timeProvider.GetTimestamp();
        if (waitStartedAt != NotMeasured)
        {
            _metrics.RecordWaitTime(_timeProvider.GetElapsedTime(waitStartedAt, now));
        }

        var watchLeaks = _leakThreshold != 0;
        lease.StartedAt = _metrics.UseTimeEnabled || watchLeaks || _sampleLeases || _endpoint is not null ? now : NotMeasured;
        _endpoint?.Leased();
        if (watchLeaks)
        {
            Watch(ref lease, acquiredAt, now);
        }
    }

    /// <summary>
    /// Ends the lease <paramref name="version"/> of <paramref name="entry"/>'s <paramref name="slot"/>: the state hands
    /// the slot to the oldest waiter, frees it (the channel going back to idle when it was the last), or evicts the
    /// channel, and this completes the waiter or queues the close. A stale or repeated release does nothing.
    /// </summary>
    internal void Release(PooledChannel<TChannel> entry, int slot, int version)
    {
        // Judged before the state takes its gate, so the factory's IsUsable never runs inside it. For a stale release
        // this looks at a channel someone else may hold, which is harmless: the state's version check turns it away.
        EvictionReason? reason = entry.IsBroken ? EvictionReason.Broken
            : !IsUsable(entry) ? EvictionReason.Unusable
            : null;
        if (entry.SlotAt(slot).StartedAt != NotMeasured)
        {
            ReleaseMeasured(entry, slot, version, reason);
            return;
        }

        var outcome = _state.Release(entry, slot, version, reason);
        if (outcome.Kind is not (ReleaseKind.Kept or ReleaseKind.Stale))
        {
            ActOnRelease(entry, slot, outcome);
        }
    }

    /// <summary>
    /// A release whose lease was timed (use time) or watched (leak detection); out of line, so the common release does
    /// not carry what only these need across the state's transition.
    /// </summary>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private void ReleaseMeasured(PooledChannel<TChannel> entry, int slot, int version, EvictionReason? reason)
    {
        // Read before the state frees the slot: from then on the slot's next lease may overwrite them.
        ref var lease = ref entry.SlotAt(slot);
        var leaseStartedAt = lease.StartedAt;
        var watch = lease.Watch;
        var outcome = ReleaseSampled(entry, slot, version, reason, leaseStartedAt, out var now);
        if (outcome.Kind == ReleaseKind.Stale)
        {
            return;
        }

        _metrics.RecordUseTime(_timeProvider.GetElapsedTime(leaseStartedAt, now));
        _endpoint?.Released(failed: reason is EvictionReason.Broken or EvictionReason.Unusable, _timeProvider.GetElapsedTime(leaseStartedAt, now));
        if (watch is not null)
        {
            EndWatch(entry, watch);
        }

        if (outcome.Kind != ReleaseKind.Kept)
        {
            ActOnRelease(entry, slot, outcome);
        }
    }

    /// <summary>What a release leaves to do outside the gate; out of line, so the common release stays small.</summary>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private void ActOnRelease(PooledChannel<TChannel> entry, int slot, PoolState<TChannel>.ReleaseOutcome outcome)
    {
        switch (outcome.Kind)
        {
            case ReleaseKind.HandedOver:
                CompleteWaiter(outcome.Waiter!, entry, slot);
                break;
            case ReleaseKind.Evicted:
                QueueClose(entry, outcome.Reason);
                break;
        }

        if (outcome.Kind is (ReleaseKind.Evicted or ReleaseKind.Left) && outcome.Reason is (EvictionReason.Broken or EvictionReason.Unusable))
        {
            ClearIfFatal(entry.Generation, entry.Failure ?? GetFailure(entry));
        }

        StartOpens(outcome.Opens);
    }

    /// <summary>Gives back a slot the fast path claimed on a shared channel but found unusable, retiring the channel.</summary>
    private void LeaveUnused(PooledChannel<TChannel> entry, int slot, EvictionReason reason)
    {
        var (evicted, opens) = _state.LeaveUnused(entry, slot, reason);
        if (evicted)
        {
            QueueClose(entry, reason);
        }

        StartOpens(opens);
    }

    /// <summary>Asks the factory, treating an exception as "not usable" so a faulty check cannot leak a lease.</summary>
    /// <remarks>
    /// Kept out of line on purpose: measured, a try/catch inlined into the lease and release paths cost more than this
    /// call does.
    /// </remarks>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private bool IsUsable(PooledChannel<TChannel> entry)
    {
        try
        {
            return _factory.IsUsable(entry.Channel);
        }
        catch (Exception)
        {
            return false;
        }
    }

    /// <summary>Queues <paramref name="count"/> opens the state reserved on the background worker (<c>Opening/</c>); inline, so the
    /// common lease and release, which start none, pay one compare.</summary>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
    private void StartOpens(int count)
    {
        if (count > 0)
        {
            PostOpens(count);
        }
    }
}
