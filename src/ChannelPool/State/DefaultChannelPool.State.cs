using System.Diagnostics.CodeAnalysis;
using System.Numerics;

namespace ChannelPool;

/// <summary>
/// The pool's counts and every transition between them. Nothing outside this file changes a count, the idle queue, the
/// waiter queue or the set of open channels; every method here runs under <c>_gate</c>.
/// </summary>
/// <remarks>
/// <para>
/// The invariant, which each transition below keeps: every channel the pool opened and has not finished closing is in
/// exactly one place, idle, leased or evicted (being closed), so
/// <c>_open.Count == _idle.Count + _leasedCount + _evictedCount</c> and
/// <c>_openedTotal - _closedTotal == _open.Count</c>. Opens in flight (<c>_openingCount</c>) are not channels yet:
/// <see cref="Opened_NoLock"/> adds one, <see cref="OpenFailed_NoLock"/> adds none.
/// </para>
/// <para>
/// A leased channel holds one lease per busy slot (<see cref="PooledChannel{TChannel}.BusySlots"/>), at most
/// <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/>; <c>_leasedCount</c> counts channels, not leases. A leased
/// channel with a free slot and nothing wrong with it is also in <c>_shareable</c>, where <see cref="Lease_NoLock"/>
/// looks first. A channel is leased while any slot is busy and goes back to idle, or is evicted, when the last one frees.
/// </para>
/// <para>
/// The transitions: <see cref="Refill_NoLock"/> (nothing → opening), <see cref="Opened_NoLock"/> (opening → idle, or
/// leased by a waiter), <see cref="Lease_NoLock"/> (idle → leased), <see cref="Release_NoLock"/> (leased → idle),
/// <see cref="HandOver_NoLock"/> (leased → leased by a waiter), <see cref="EvictLeased_NoLock"/> and
/// <see cref="EvictIdle_NoLock"/> (→ evicted), <see cref="Closed_NoLock"/> (evicted → gone), and for callers
/// <see cref="Wait_NoLock"/> and <see cref="Abandon_NoLock"/>. With shared channels, also <see cref="Share_NoLock"/>
/// (a leased channel takes more leases), <see cref="Retire_NoLock"/> (it takes no more) and <see cref="Leave_NoLock"/>
/// (one of its leases ends on a channel that must go).
/// </para>
/// </remarks>
public sealed partial class DefaultChannelPool<TChannel>
{
    // Guarded by _gate; changed only in this file.
    private readonly IdleQueue<TChannel> _idle;
    private readonly WaiterQueue<TChannel> _waiters = new();
    private readonly HashSet<PooledChannel<TChannel>> _open = [];
    private readonly List<PooledChannel<TChannel>> _shareable = [];
    private int _leasedCount;
    private int _openingCount;
    private int _evictedCount;
    private long _openedTotal;
    private long _closedTotal;

    // Set when the idle count reaches the refill threshold (or a warm-up, reload or failed open asks for a fill);
    // cleared when the pool is full again. While set, the refill fills to PoolSize rather than only for waiters.
    private bool _refilling;

    private ChannelPoolSnapshot SnapshotNoLock() => new(
        _idle.Count, _leasedCount, _openingCount, _evictedCount, _waiters.Count, BreakerState, _openedTotal, _closedTotal);

    /// <summary>
    /// A new lease: a free slot on a shared channel when <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> allows one
    /// (<paramref name="joined"/> is then true), else idle → leased, taking an idle channel in the configured
    /// <see cref="IdleOrder"/> on its slot 0.
    /// </summary>
    private bool Lease_NoLock([NotNullWhen(true)] out PooledChannel<TChannel>? entry, out int slot, out bool joined)
    {
        if (_shareable.Count > 0 && TryJoin_NoLock(out entry, out slot))
        {
            joined = true;
            return true;
        }

        joined = false;
        slot = 0;
        if (!_idle.TryTake(_settings.IdleOrder, out entry))
        {
            return false;
        }

        _leasedCount++;
        entry.IsBroken = false;
        entry.BusySlots = 1;
        return true;
    }

    /// <summary>Takes a free slot on the first shareable channel, dropping any that broke or expired since.</summary>
    private bool TryJoin_NoLock([NotNullWhen(true)] out PooledChannel<TChannel>? entry, out int slot)
    {
        if (_settings.MaxLeasesPerChannel == 1)
        {
            // Reconfigured to one lease per channel: channels still shared go back to idle as their leases end.
            StopSharing_NoLock();
        }

        while (_shareable.Count > 0)
        {
            var candidate = _shareable[0];
            if (candidate.IsBroken || _clock.HasPassed(candidate.ExpiresAt))
            {
                Retire_NoLock(candidate, candidate.IsBroken ? EvictionReason.Broken : EvictionReason.LifetimeExpired);
                continue;
            }

            slot = ClaimSlot_NoLock(candidate);
            entry = candidate;
            return true;
        }

        entry = null;
        slot = 0;
        return false;
    }

    /// <summary>
    /// Leased → leased and shared: lets <paramref name="entry"/>, just leased on its slot 0, take more leases, first
    /// from the waiters, who are returned with their slots, then from later callers.
    /// </summary>
    private List<(Waiter<TChannel> Waiter, int Slot)>? Share_NoLock(PooledChannel<TChannel> entry)
    {
        List<(Waiter<TChannel> Waiter, int Slot)>? joiners = null;
        if (_settings.MaxLeasesPerChannel == 1 || _disposed || entry.IsEvicted || entry.RetireReason is not null || entry.IsBroken)
        {
            return null;
        }

        while (HasFreeSlot_NoLock(entry) && _waiters.Dequeue() is { } waiter)
        {
            (joiners ??= []).Add((waiter, ClaimSlot_NoLock(entry)));
        }

        if (!entry.IsShareable && HasFreeSlot_NoLock(entry))
        {
            entry.IsShareable = true;
            _shareable.Add(entry);
        }

        return joiners;
    }

    private bool HasFreeSlot_NoLock(PooledChannel<TChannel> entry) =>
        BitOperations.PopCount(entry.BusySlots) < Math.Min(_settings.MaxLeasesPerChannel, entry.Slots.Length);

    /// <summary>Marks the lowest free slot busy, and takes the channel out of <c>_shareable</c> when that fills it.</summary>
    private int ClaimSlot_NoLock(PooledChannel<TChannel> entry)
    {
        var slot = BitOperations.TrailingZeroCount(~entry.BusySlots);
        entry.BusySlots |= 1UL << slot;
        if (!HasFreeSlot_NoLock(entry))
        {
            Unshare_NoLock(entry);
        }

        return slot;
    }

    /// <summary>A shared channel takes no more leases; its last release evicts it for <paramref name="reason"/>.</summary>
    private void Retire_NoLock(PooledChannel<TChannel> entry, EvictionReason reason)
    {
        entry.RetireReason ??= reason;
        Unshare_NoLock(entry);
    }

    private void Unshare_NoLock(PooledChannel<TChannel> entry)
    {
        if (entry.IsShareable)
        {
            entry.IsShareable = false;
            _shareable.Remove(entry);
        }
    }

    /// <summary>Whether a lease could be had now without waiting: an idle channel, or a shared one with room.</summary>
    private bool CanLease_NoLock() => _idle.Count > 0 || _shareable.Count > 0;

    /// <summary>Whether the idle count is at the refill threshold with no refill under way: the lease path's one check.</summary>
    private bool RefillDue_NoLock() => _idle.Count <= _settings.RefillThreshold && !_refilling;

    /// <summary>
    /// One lease ends well: its slot frees, and the channel goes back to idle when it was the last, or takes more leases
    /// again when it was full.
    /// </summary>
    private void Release_NoLock(PooledChannel<TChannel> entry, int slot)
    {
        entry.BusySlots &= ~(1UL << slot);
        if (entry.BusySlots == 0)
        {
            Unshare_NoLock(entry);
            _leasedCount--;
            _idle.Enqueue(entry);
        }
        else if (!entry.IsShareable)
        {
            _ = Share_NoLock(entry);
        }
    }

    /// <summary>
    /// One lease ends on a channel that must go (<paramref name="reason"/>): its slot frees, and the channel is evicted
    /// when it was the last lease, or retired, taking no more, while others still hold it. Returns whether it was evicted.
    /// </summary>
    private bool Leave_NoLock(PooledChannel<TChannel> entry, int slot, EvictionReason reason)
    {
        entry.BusySlots &= ~(1UL << slot);
        if (entry.BusySlots != 0)
        {
            Retire_NoLock(entry, reason);
            return false;
        }

        EvictLeased_NoLock(entry);
        return true;
    }

    /// <summary>Leased → leased by the oldest waiter, who is returned; <see langword="null"/> when nobody waits.</summary>
    private Waiter<TChannel>? HandOver_NoLock() => _waiters.Dequeue();

    /// <summary>Leased → evicted, whatever leases it still carried.</summary>
    private void EvictLeased_NoLock(PooledChannel<TChannel> entry)
    {
        entry.BusySlots = 0;
        Unshare_NoLock(entry);
        _leasedCount--;
        MarkEvicted_NoLock(entry);
    }

    /// <summary>Idle → evicted, for the idle channels <paramref name="evict"/> picks (all when it is null).</summary>
    private List<PooledChannel<TChannel>> EvictIdle_NoLock(Func<PooledChannel<TChannel>, bool>? evict = null)
    {
        var evicted = _idle.RemoveAll(evict ?? (static _ => true));
        evicted.ForEach(MarkEvicted_NoLock);
        return evicted;
    }

    /// <summary>
    /// Leased → evicted for every lease still out at the end of a drain. The idle queue was emptied when the drain
    /// began and nothing re-enters it, so an open channel not yet evicted is leased. Bumping the busy slots' versions
    /// makes the holders' later releases do nothing.
    /// </summary>
    private List<PooledChannel<TChannel>> EvictOutstandingLeases_NoLock()
    {
        List<PooledChannel<TChannel>> abandoned = [];
        foreach (var entry in _open)
        {
            if (!entry.IsEvicted)
            {
                for (var busy = entry.BusySlots; busy != 0; busy &= busy - 1)
                {
                    entry.Slots[BitOperations.TrailingZeroCount(busy)].Version++;
                }

                abandoned.Add(entry);
            }
        }

        abandoned.ForEach(EvictLeased_NoLock);
        return abandoned;
    }

    /// <summary>
    /// No lease joins a channel already shared any more: a drain began (each is then evicted at its last release), or
    /// the pool was reconfigured to one lease per channel (each goes back to idle at its last release).
    /// </summary>
    private void StopSharing_NoLock()
    {
        foreach (var entry in _shareable)
        {
            entry.IsShareable = false;
        }

        _shareable.Clear();
    }

    /// <summary>Evicted → gone: the close or abort finished.</summary>
    private void Closed_NoLock(PooledChannel<TChannel> entry)
    {
        _evictedCount--;
        _closedTotal++;
        _open.Remove(entry);
    }

    /// <summary>
    /// Opening → idle; or leased, by the oldest waiter, who is returned; or evicted, when the pool is draining.
    /// </summary>
    private Waiter<TChannel>? Opened_NoLock(PooledChannel<TChannel> entry)
    {
        _openingCount--;
        _openedTotal++;
        _open.Add(entry);
        if (_disposed)
        {
            MarkEvicted_NoLock(entry);
            return null;
        }

        var waiter = _waiters.Dequeue();
        if (waiter is null)
        {
            _idle.Enqueue(entry);
        }
        else
        {
            _leasedCount++;
            entry.BusySlots = 1;
        }

        return waiter;
    }

    /// <summary>Opening → nothing.</summary>
    private void OpenFailed_NoLock() => _openingCount--;

    /// <summary>
    /// Nothing → opening: decides how many opens to start now and counts them. The rule: once the idle count falls to
    /// the refill threshold, fill back up to PoolSize plus one channel per waiting caller; waiting callers alone also
    /// get opens. Never above MaxChannels and never more than MaxConcurrentOpens in flight. Nothing while opens are
    /// paused, and one at a time while the breaker is not closed: Polly lets it through as its probe once the break is
    /// over, or turns it away.
    /// </summary>
    /// <param name="toPoolSize">Fill to PoolSize whatever the threshold says (a warm-up, a reload, a failed open).</param>
    private int Refill_NoLock(bool toPoolSize = false)
    {
        if (toPoolSize)
        {
            _refilling = true;
        }

        if (_disposed || _opensPaused)
        {
            return 0;
        }

        var settings = _settings;
        var idle = _idle.Count;
        if (!_refilling && idle <= settings.RefillThreshold)
        {
            _refilling = true;
        }

        var wanted = (_refilling ? settings.PoolSize : 0) + _waiters.Count - idle - _openingCount;
        if (wanted <= 0)
        {
            _refilling = false;
            return 0;
        }

        var room = settings.MaxChannels - (idle + _leasedCount + _openingCount);
        var count = Math.Min(wanted, Math.Min(room, settings.MaxConcurrentOpens - _openingCount));
        if (count > 0 && BreakerState != BreakerState.Closed)
        {
            count = _openingCount == 0 ? 1 : 0;
        }

        if (count <= 0)
        {
            return 0;
        }

        _openingCount += count;
        return count;
    }

    /// <summary>A caller starts waiting, first come first served.</summary>
    private void Wait_NoLock(Waiter<TChannel> waiter) => _waiters.Enqueue(waiter);

    /// <summary>A caller stops waiting (timeout or cancellation) before a channel reached it.</summary>
    private void Abandon_NoLock(Waiter<TChannel> waiter) => _waiters.Remove(waiter);

    /// <summary>Every waiting caller stops waiting, to be failed (breaker open, drain).</summary>
    private List<Waiter<TChannel>> AbandonAll_NoLock() => _waiters.DequeueAll();

    private void MarkEvicted_NoLock(PooledChannel<TChannel> entry)
    {
        entry.IsEvicted = true;
        _evictedCount++;
    }
}
