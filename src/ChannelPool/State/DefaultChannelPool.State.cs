using System.Diagnostics.CodeAnalysis;

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
/// The transitions: <see cref="Refill_NoLock"/> (nothing → opening), <see cref="Opened_NoLock"/> (opening → idle, or
/// leased by a waiter), <see cref="Lease_NoLock"/> (idle → leased), <see cref="Release_NoLock"/> (leased → idle),
/// <see cref="HandOver_NoLock"/> (leased → leased by a waiter), <see cref="EvictLeased_NoLock"/> and
/// <see cref="EvictIdle_NoLock"/> (→ evicted), <see cref="Closed_NoLock"/> (evicted → gone), and for callers
/// <see cref="Wait_NoLock"/> and <see cref="Abandon_NoLock"/>.
/// </para>
/// </remarks>
public sealed partial class DefaultChannelPool<TChannel>
{
    // Guarded by _gate; changed only in this file.
    private readonly IdleQueue<TChannel> _idle;
    private readonly WaiterQueue<TChannel> _waiters = new();
    private readonly HashSet<PooledChannel<TChannel>> _open = [];
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

    /// <summary>Idle → leased: takes an idle channel in the configured <see cref="IdleOrder"/>.</summary>
    private bool Lease_NoLock([NotNullWhen(true)] out PooledChannel<TChannel>? entry)
    {
        if (!_idle.TryTake(_settings.IdleOrder, out entry))
        {
            return false;
        }

        _leasedCount++;
        return true;
    }

    /// <summary>Whether the idle count is at the refill threshold with no refill under way: the lease path's one check.</summary>
    private bool RefillDue_NoLock() => _idle.Count <= _settings.RefillThreshold && !_refilling;

    /// <summary>Leased → idle.</summary>
    private void Release_NoLock(PooledChannel<TChannel> entry)
    {
        _leasedCount--;
        _idle.Enqueue(entry);
    }

    /// <summary>Leased → leased by the oldest waiter, who is returned; <see langword="null"/> when nobody waits.</summary>
    private Waiter<TChannel>? HandOver_NoLock() => _waiters.Dequeue();

    /// <summary>Leased → evicted.</summary>
    private void EvictLeased_NoLock(PooledChannel<TChannel> entry)
    {
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
    /// began and nothing re-enters it, so an open channel not yet evicted is leased. Bumping the lease version makes
    /// the holder's later release do nothing.
    /// </summary>
    private List<PooledChannel<TChannel>> EvictOutstandingLeases_NoLock()
    {
        List<PooledChannel<TChannel>> abandoned = [];
        foreach (var entry in _open)
        {
            if (!entry.IsEvicted)
            {
                entry.LeaseVersion++;
                abandoned.Add(entry);
            }
        }

        abandoned.ForEach(EvictLeased_NoLock);
        return abandoned;
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
