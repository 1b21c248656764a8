using System.Runtime.CompilerServices;

namespace ChannelPool;

// Leasing, the hot path: claiming an idle channel or a shared slot, releasing it, and callers who wait.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>
    /// A new lease without waiting: a free slot on a shared channel, else idle → leased, taking an idle channel in the
    /// configured <see cref="IdleOrder"/>. Also starts a refill when the idle count reaches the threshold.
    /// </summary>
    /// <returns>The claim; its <see cref="LeaseClaim.Entry"/> is <see langword="null"/> when nothing is free.</returns>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public LeaseClaim TryLease()
    {
        _gate.Enter();
        if (_shared.Count > 0)
        {
            var joined = TryJoin_NoLock();
            if (joined.Entry is not null)
            {
                return joined;
            }
        }

        var settings = _settings;
        if (!_idle.TryTake(settings.IdleOrder, out var entry))
        {
            _gate.Exit();
            return default;
        }

        _leasedCount++;
        Place_NoLock(entry, ChannelPlace.Leased);

        // A new peak above an adaptive target raises it now, not at the next tick: demand is growing.
        var risen = false;
        if (_leasedCount > _peakDemand)
        {
            _peakDemand = _leasedCount;
            risen = _leasedCount > _idleTarget && _adaptiveTarget is not null;
        }

        entry.IsBroken = false;
        var kind = LeaseKind.Idle;
        if (entry.Shared is { } shared)
        {
            var sharing = ShareLimit_NoLock() > 1;
            shared.LeaseFromIdle(sharing);
            if (sharing)
            {
                kind = LeaseKind.IdleShareable;
            }
        }

        var opens = (_idle.Count <= _refillThreshold && !_refilling) || risen ? Refill_NoLock() : 0;
        Exit(nameof(TryLease));
        return new LeaseClaim(entry, 0, kind, opens);
    }

    /// <summary>
    /// One lease ends: leased → idle (or back to its other leases), → the oldest waiter, or → evicted when
    /// <paramref name="reason"/> (judged outside the gate, from the factory's verdict) or the pool's rules say it must
    /// go. A stale or repeated release, whose <paramref name="version"/> no longer matches, changes nothing.
    /// </summary>
    public ReleaseOutcome Release(PooledChannel<TChannel> entry, int slot, int version, EvictionReason? reason)
    {
        _gate.Enter();
        if (!TryEndLease_NoLock(entry, slot, version))
        {
            return default;
        }

        var settings = _settings;
        var now = _clock.Now;

        // A cleared channel fails the deadline check (Retire), a paused or draining pool the _idleClosed one.
        if (reason is null && entry.Shared is null && settings.LeaseMode == LeaseMode.Reuse && entry.EvictAfter > now
            && !_idleClosed && _waiters.Count == 0)
        {
            // The common case, kept small enough to inline: a healthy channel with one lease back to idle. A call
            // succeeded, so a wave of fatal errors is over.
            _leasedCount--;
            _idle.Enqueue(entry);
            entry.IdleSince = now;
            Place_NoLock(entry, ChannelPlace.Idle);
            _fatalWave = false;
            Exit(nameof(Release));
            return new ReleaseOutcome(ReleaseKind.Kept, waiter: null, opens: 0, reason: default);
        }

        return ReleaseOther_NoLock(entry, slot, reason);
    }

    /// <summary>
    /// Ends the lease <paramref name="version"/> of <paramref name="slot"/>: of two racing releases of one lease, exactly
    /// one gets past here; a stale lease never does, and leaves the gate.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool TryEndLease_NoLock(PooledChannel<TChannel> entry, int slot, int version)
    {
        ref var lease = ref entry.SlotAt(slot);
        if (lease.Version != version)
        {
            _gate.Exit();
            return false;
        }

        lease.Version = version + 1;
        return true;
    }

    /// <summary>The rest of <see cref="Release"/>, under its gate: a shared channel, a waiter, or a channel that must go.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private ReleaseOutcome ReleaseOther_NoLock(PooledChannel<TChannel> entry, int slot, EvictionReason? reason)
    {
        var settings = _settings;
        reason ??= settings.LeaseMode == LeaseMode.SingleUse ? EvictionReason.SingleUse
            : entry.EvictAfter <= _clock.Now ? entry.ExpiredReason
            : entry.Shared?.RetireReason;
        if (reason is null && !_disposed)
        {
            _fatalWave = false;
            if (_waiters.Count == 0 || _paused)
            {
                // Back to idle (parked while paused, when nobody is handed a channel), or to its other leases. A paused
                // pool lets no lease join a shared channel: one lease per channel stops its sharing.
                if (entry.Shared is null || _shared.Release(entry, slot, _paused ? 1 : ShareLimit_NoLock(), _waiters))
                {
                    _leasedCount--;
                    EnterIdle_NoLock(entry);
                }

                Exit(nameof(Release));
                return new ReleaseOutcome(ReleaseKind.Kept, waiter: null, opens: 0, reason: default);
            }

            // Handed straight to the oldest waiter: the slot stays leased.
            var waiter = _waiters.Dequeue();
            entry.Shared?.HandOver(slot, sharing: ShareLimit_NoLock() > 1);
            Exit(nameof(Release));
            return new ReleaseOutcome(ReleaseKind.HandedOver, waiter, opens: 0, reason: default);
        }

        var why = reason ?? EvictionReason.Shutdown;
        var evicted = Leave_NoLock(entry, slot, why);
        var opens = !evicted ? 0
            : Refill_NoLock() + (why == EvictionReason.LifetimeExpired ? ReplaceExpired_NoLock(entry) : 0);
        Exit(nameof(Release));
        return new ReleaseOutcome(evicted ? ReleaseKind.Evicted : ReleaseKind.Left, waiter: null, opens, why);
    }

    /// <summary>Leased → evicted, for a channel the lease path took but found expired or unusable. Returns opens to start.</summary>
    public int EvictLeased(PooledChannel<TChannel> entry)
    {
        _gate.Enter();
        EvictLeased_NoLock(entry);
        var opens = Refill_NoLock() + (entry.EvictAfter <= _clock.Now ? ReplaceExpired_NoLock(entry) : 0);
        Exit(nameof(EvictLeased));
        return opens;
    }

    /// <summary>
    /// Gives back a slot the lease path claimed on a shared channel but found unusable: the channel is retired, and
    /// evicted if that was its last lease. Returns whether it was evicted, and opens to start.
    /// </summary>
    public (bool Evicted, int Opens) LeaveUnused(PooledChannel<TChannel> entry, int slot, EvictionReason reason)
    {
        _gate.Enter();
        var evicted = Leave_NoLock(entry, slot, reason);
        var opens = evicted ? Refill_NoLock() : 0;
        Exit(nameof(LeaveUnused));
        return (evicted, opens);
    }

    /// <summary>
    /// Leased → leased and shared: lets <paramref name="entry"/>, just leased from idle and checked, take more leases,
    /// first from the waiters, who are returned with their slots.
    /// </summary>
    public List<(Waiter<TChannel> Waiter, int Slot)>? Share(PooledChannel<TChannel> entry)
    {
        _gate.Enter();
        var joiners = _disposed ? null : _shared.Share(entry, ShareLimit_NoLock(), _waiters);
        Exit(nameof(Share));
        return joiners;
    }

    /// <summary>
    /// A caller with no channel starts waiting, first come first served, and opens may start for it. Or it must not
    /// wait: the pool is disposed, paused (when <see cref="ChannelPoolOptions.AcquireWhilePaused"/> says fail), or the
    /// breaker stops opens; or it need not: a lease became free since it looked. While paused, waiters get no opens.
    /// </summary>
    public EnqueueOutcome Enqueue(Waiter<TChannel> waiter)
    {
        _gate.Enter();
        EnqueueOutcome outcome;
        if (_disposed)
        {
            outcome = new EnqueueOutcome(EnqueueKind.Disposed, 0, default, null);
        }
        else if (_idle.Count > 0 || _shared.Count > 0)
        {
            outcome = new EnqueueOutcome(EnqueueKind.LeaseFree, 0, default, null);
        }
        else if (_paused && _settings.AcquireWhilePaused == PausedAcquireMode.Fail)
        {
            outcome = new EnqueueOutcome(EnqueueKind.Paused, 0, Snapshot_NoLock(), null);
        }
        else if (RefusesWaiters_NoLock())
        {
            outcome = new EnqueueOutcome(EnqueueKind.Refused, 0, Snapshot_NoLock(), RemainingPause_NoLock());
        }
        else
        {
            // Queued under the same gate that release takes, so a channel released from here on finds this waiter.
            _waiters.Enqueue(waiter);

            // A caller who waits because the pool is paused shows the pause, not demand the target should follow.
            if (!_paused)
            {
                _peakDemand = Math.Max(_peakDemand, Demand_NoLock());
            }

            outcome = new EnqueueOutcome(EnqueueKind.Queued, Refill_NoLock(), default, null);
        }

        Exit(nameof(Enqueue));
        return outcome;
    }

    /// <summary>
    /// A caller stops waiting (timeout or cancellation) before a channel reached it. Returns the counts including the
    /// caller and the acquire timeout, or <see langword="null"/> when a channel already reached it.
    /// </summary>
    public (ChannelPoolSnapshot Snapshot, TimeSpan Timeout)? Abandon(Waiter<TChannel> waiter)
    {
        _gate.Enter();
        if (!waiter.IsQueued)
        {
            _gate.Exit();
            return null;
        }

        var snapshot = Snapshot_NoLock();
        _waiters.Remove(waiter);
        var timeout = _settings.AcquireTimeout;
        Exit(nameof(Abandon));
        return (snapshot, timeout);
    }

    /// <summary>Copies out the channels not evicted, for the leak scan to read their leases' watches outside the gate.</summary>
    /// <returns>Idle and leased channels; an idle one's watch, if any, is of a lease already returned.</returns>
    public PooledChannel<TChannel>[] OpenChannels()
    {
        _gate.Enter();
        var open = _disposed ? [] : _open.Where(static entry => !entry.IsEvicted).ToArray();
        _gate.Exit();
        return open;
    }

    /// <summary>A free slot on a shared channel; leaves the gate when it found one, and holds it when not.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private LeaseClaim TryJoin_NoLock()
    {
        if (!_shared.TryJoin(ShareLimit_NoLock(), _clock.Now, out var entry, out var slot))
        {
            return default;
        }

        var opens = _idle.Count <= _refillThreshold && !_refilling ? Refill_NoLock() : 0;
        Exit(nameof(TryLease));
        return new LeaseClaim(entry, slot, LeaseKind.Joined, opens);
    }

    /// <summary>What <see cref="TryLease"/> claimed: a channel and slot, and the opens it started.</summary>
    internal readonly struct LeaseClaim(PooledChannel<TChannel>? entry, int slot, LeaseKind kind, int opens)
    {
        // Laid out to fit two registers, so the hot path returns it without going through memory.
        public readonly PooledChannel<TChannel>? Entry = entry;
        public readonly int Opens = opens;
        public readonly byte Slot = (byte)slot;
        public readonly LeaseKind Kind = kind;
    }

    /// <summary>What <see cref="Release"/> decided.</summary>
    internal readonly struct ReleaseOutcome(ReleaseKind kind, Waiter<TChannel>? waiter, int opens, EvictionReason reason)
    {
        /// <summary>The waiter the slot went to, for <see cref="ReleaseKind.HandedOver"/>.</summary>
        public readonly Waiter<TChannel>? Waiter = waiter;
        public readonly int Opens = opens;
        public readonly ReleaseKind Kind = kind;
        private readonly byte _reason = (byte)reason;

        /// <summary>Gets why the channel goes, for <see cref="ReleaseKind.Evicted"/> and <see cref="ReleaseKind.Left"/>.</summary>
        public EvictionReason Reason => (EvictionReason)_reason;
    }
}

// How a lease was claimed.
internal enum LeaseKind : byte
{
    /// <summary>Nothing was free.</summary>
    None,

    /// <summary>An idle channel, now leased on its slot 0.</summary>
    Idle,

    /// <summary>An idle channel that may take more leases once it is checked (see <see cref="PoolState{TChannel}.Share"/>).</summary>
    IdleShareable,

    /// <summary>A free slot on a channel other leases hold.</summary>
    Joined,
}

// How a release ended.
internal enum ReleaseKind : byte
{
    /// <summary>The lease was already released; nothing changed.</summary>
    Stale,

    /// <summary>The channel went back to idle, or stays with its other leases.</summary>
    Kept,

    /// <summary>The slot went to a waiter, to be completed.</summary>
    HandedOver,

    /// <summary>The channel was evicted, to be closed.</summary>
    Evicted,

    /// <summary>The channel must go, but other leases still hold it: it takes no more, and their last release evicts it.</summary>
    Left,
}

// How a caller's attempt to wait ended.
internal enum EnqueueKind
{
    /// <summary>It waits.</summary>
    Queued,

    /// <summary>A lease became free since it looked: it takes that instead.</summary>
    LeaseFree,

    /// <summary>The pool is disposed.</summary>
    Disposed,

    /// <summary>The breaker stops opens: it fails fast.</summary>
    Refused,

    /// <summary>The pool is paused and callers do not wait for it: it fails fast.</summary>
    Paused,
}

// What <see cref="PoolState{TChannel}.Enqueue"/> decided, with the counts and pause for a refusal.
internal readonly record struct EnqueueOutcome(EnqueueKind Kind, int Opens, ChannelPoolSnapshot Snapshot, TimeSpan? RetryAfter);

/// <summary>
/// The idle channels, in the order they were released. A lease takes from either end, as <see cref="IdleOrder"/> says.
/// Not thread-safe: the pool state's gate guards it.
/// </summary>
/// <remarks>
/// A ring of struct slots rather than a <see cref="Queue{T}"/>: storing a reference into a reference-type array from
/// shared generic code costs a covariance-check helper call on every enqueue, and a struct slot needs none.
/// </remarks>
internal sealed class IdleQueue<TChannel>
    where TChannel : class
{
    private Slot[] _slots;
    private int _head;

    public IdleQueue(int capacity) => _slots = new Slot[Math.Max(capacity, 1)];

    public int Count { get; private set; }

    /// <summary>Takes the channel released last (<see cref="IdleOrder.MostRecentlyUsed"/>) or first.</summary>
    public bool TryTake(IdleOrder order, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out PooledChannel<TChannel>? entry)
    {
        if (Count == 0)
        {
            entry = null;
            return false;
        }

        if (order == IdleOrder.MostRecentlyUsed)
        {
            var tail = _head + Count - 1;
            ref var newest = ref _slots[tail >= _slots.Length ? tail - _slots.Length : tail];
            entry = newest.Entry!;
            newest.Entry = null;
        }
        else
        {
            ref var oldest = ref _slots[_head];
            entry = oldest.Entry!;
            oldest.Entry = null;
            _head = _head + 1 == _slots.Length ? 0 : _head + 1;
        }

        Count--;
        return true;
    }

    public void Enqueue(PooledChannel<TChannel> entry)
    {
        if (Count == _slots.Length)
        {
            Grow();
        }

        var tail = _head + Count;
        if (tail >= _slots.Length)
        {
            tail -= _slots.Length;
        }

        _slots[tail].Entry = entry;
        Count++;
    }

    /// <summary>Copies the idle channels out, oldest first, for the cleanup timer to inspect.</summary>
    public PooledChannel<TChannel>[] ToArray()
    {
        var copy = new PooledChannel<TChannel>[Count];
        for (var i = 0; i < Count; i++)
        {
            copy[i] = _slots[(_head + i) % _slots.Length].Entry!;
        }

        return copy;
    }

    /// <summary>Says whether any idle entry matches; allocates nothing, for the invariant check on every transition.</summary>
    public bool Any<TState>(Func<PooledChannel<TChannel>, TState, bool> match, TState state)
    {
        for (var i = 0; i < Count; i++)
        {
            if (match(_slots[(_head + i) % _slots.Length].Entry!, state))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>Counts the idle entries that match; allocates nothing, for the expiry timer.</summary>
    public int CountWhere<TState>(Func<PooledChannel<TChannel>, TState, bool> match, TState state)
    {
        var count = 0;
        for (var i = 0; i < Count; i++)
        {
            count += match(_slots[(_head + i) % _slots.Length].Entry!, state) ? 1 : 0;
        }

        return count;
    }

    /// <summary>Removes, keeping the order of the rest, every entry <paramref name="remove"/> selects.</summary>
    /// <returns>The removed entries.</returns>
    public List<PooledChannel<TChannel>> RemoveAll(Func<PooledChannel<TChannel>, bool> remove)
    {
        var removed = new List<PooledChannel<TChannel>>();
        var kept = 0;
        for (var i = 0; i < Count; i++)
        {
            var entry = _slots[(_head + i) % _slots.Length].Entry!;
            if (remove(entry))
            {
                removed.Add(entry);
            }
            else
            {
                _slots[(_head + kept++) % _slots.Length].Entry = entry;
            }
        }

        for (var i = kept; i < Count; i++)
        {
            _slots[(_head + i) % _slots.Length].Entry = null;
        }

        Count = kept;
        return removed;
    }

    // The first capacity is MaxChannels; a reconfiguration that raises MaxChannels can make idle outgrow it.
    private void Grow()
    {
        var larger = new Slot[_slots.Length * 2];
        for (var i = 0; i < Count; i++)
        {
            larger[i] = _slots[(_head + i) % _slots.Length];
        }

        _slots = larger;
        _head = 0;
    }

    private struct Slot
    {
        public PooledChannel<TChannel>? Entry;
    }
}
