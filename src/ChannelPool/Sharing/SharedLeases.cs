using System.Diagnostics.CodeAnalysis;
using System.Numerics;

namespace ChannelPool;

/// <summary>
/// Shared leases (<see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> above 1): the leased channels that still take
/// more leases, and the rules for their slots. Owned by <see cref="PoolState{TChannel}"/>; every member runs under its
/// gate.
/// </summary>
/// <remarks>
/// A shared channel is leased while any slot is busy, and goes back to idle, or is evicted, when the last one frees.
/// A leased channel with a free slot and nothing wrong with it is in this list, where a new lease looks first, so a
/// moderate load fills one channel before it takes another, as a singleton proxy's load runs over one connection.
/// </remarks>
internal sealed class SharedLeases<TChannel>
    where TChannel : class
{
    private readonly List<PooledChannel<TChannel>> _shareable = [];

    /// <summary>Gets how many leased channels take more leases. The lease path's one look at sharing.</summary>
    public int Count { get; private set; }

    /// <summary>Takes a free slot on the first shareable channel, retiring any that broke or expired since.</summary>
    public bool TryJoin(int maxLeases, long now, [NotNullWhen(true)] out PooledChannel<TChannel>? entry, out int slot)
    {
        if (maxLeases == 1)
        {
            // Reconfigured to one lease per channel: channels still shared go back to idle as their leases end.
            StopSharing();
        }

        while (Count > 0)
        {
            var candidate = _shareable[0];
            if (candidate.IsBroken || candidate.EvictAfter <= now)
            {
                Retire(candidate, candidate.IsBroken ? EvictionReason.Broken : candidate.ExpiredReason);
                continue;
            }

            slot = ClaimSlot(candidate, maxLeases);
            entry = candidate;
            return true;
        }

        entry = null;
        slot = 0;
        return false;
    }

    /// <summary>
    /// Lets <paramref name="entry"/>, just leased on its slot 0 and checked, take more leases: first the oldest
    /// waiters, who are returned with their slots, then later callers.
    /// </summary>
    public List<(Waiter<TChannel> Waiter, int Slot)>? Share(PooledChannel<TChannel> entry, int maxLeases, WaiterQueue<TChannel> waiters)
    {
        // A channel a clear retired between its lease and this call takes no one else.
        if (entry.Shared is not { } shared || maxLeases == 1 || entry.IsEvicted || entry.IsRetired || shared.RetireReason is not null || entry.IsBroken)
        {
            return null;
        }

        List<(Waiter<TChannel> Waiter, int Slot)>? joiners = null;
        while (HasFreeSlot(shared, maxLeases) && waiters.Dequeue() is { } waiter)
        {
            (joiners ??= []).Add((waiter, ClaimSlot(entry, maxLeases)));
        }

        if (!shared.IsShareable && HasFreeSlot(shared, maxLeases))
        {
            shared.IsShareable = true;
            _shareable.Add(entry);
            Count++;
        }

        return joiners;
    }

    /// <summary>
    /// One lease ends well. Returns whether it was the channel's last, so the channel goes back to idle; otherwise the
    /// channel takes more leases again if it was full.
    /// </summary>
    public bool Release(PooledChannel<TChannel> entry, int slot, int maxLeases, WaiterQueue<TChannel> waiters)
    {
        var shared = entry.Shared!;
        shared.BusySlots &= ~(1UL << slot);
        if (shared.BusySlots == 0)
        {
            Unshare(entry);
            return true;
        }

        if (!shared.IsShareable)
        {
            // Nobody waits on this path, so no joiner comes back.
            _ = Share(entry, maxLeases, waiters);
        }

        return false;
    }

    /// <summary>
    /// One lease ends on a channel that must go. Returns whether it was the last lease, so the channel is evicted;
    /// otherwise the channel is retired for <paramref name="reason"/> and takes no more leases.
    /// </summary>
    public bool Leave(PooledChannel<TChannel> entry, int slot, EvictionReason reason)
    {
        var shared = entry.Shared!;
        shared.BusySlots &= ~(1UL << slot);
        if (shared.BusySlots == 0)
        {
            return true;
        }

        Retire(entry, reason);
        return false;
    }

    /// <summary>The channel leaves the leased state for good, whatever leases it still carried.</summary>
    public void Evict(PooledChannel<TChannel> entry)
    {
        if (entry.Shared is { } shared)
        {
            shared.BusySlots = 0;
            Unshare(entry);
        }
    }

    /// <summary>
    /// No lease joins a channel already shared any more: a drain began (each is then evicted at its last release), or
    /// the pool was reconfigured to one lease per channel (each goes back to idle at its last release).
    /// </summary>
    public void StopSharing()
    {
        foreach (var entry in _shareable)
        {
            entry.Shared!.IsShareable = false;
        }

        _shareable.Clear();
        Count = 0;
    }

    /// <summary>
    /// Every channel that takes more leases stops taking them, for <paramref name="reason"/>: a clear retired it, and its
    /// last release evicts it.
    /// </summary>
    public void RetireAll(EvictionReason reason)
    {
        foreach (var entry in _shareable)
        {
            var shared = entry.Shared!;
            shared.RetireReason ??= reason;
            shared.IsShareable = false;
        }

        _shareable.Clear();
        Count = 0;
    }

    /// <summary>Makes every lease still held on <paramref name="entry"/> stale, so its holder's release does nothing.</summary>
    public static void InvalidateLeases(PooledChannel<TChannel> entry)
    {
        if (entry.Shared is not { } shared)
        {
            entry.FirstSlot.Version++;
            return;
        }

        for (var busy = shared.BusySlots; busy != 0; busy &= busy - 1)
        {
            entry.SlotAt(BitOperations.TrailingZeroCount(busy)).Version++;
        }
    }

    private static bool HasFreeSlot(PooledChannel<TChannel>.SharedSlots shared, int maxLeases) =>
        BitOperations.PopCount(shared.BusySlots) < Math.Min(maxLeases, shared.Count);

    /// <summary>Marks the lowest free slot busy, and takes the channel out of the list when that fills it.</summary>
    private int ClaimSlot(PooledChannel<TChannel> entry, int maxLeases)
    {
        var shared = entry.Shared!;
        var slot = BitOperations.TrailingZeroCount(~shared.BusySlots);
        shared.BusySlots |= 1UL << slot;

        // A lease joins only while the pool shares channels.
        shared.SharingSlots |= 1UL << slot;
        if (!HasFreeSlot(shared, maxLeases))
        {
            Unshare(entry);
        }

        return slot;
    }

    /// <summary>A shared channel takes no more leases; its last release evicts it for <paramref name="reason"/>.</summary>
    private void Retire(PooledChannel<TChannel> entry, EvictionReason reason)
    {
        entry.Shared!.RetireReason ??= reason;
        Unshare(entry);
    }

    private void Unshare(PooledChannel<TChannel> entry)
    {
        var shared = entry.Shared!;
        if (shared.IsShareable)
        {
            shared.IsShareable = false;
            _shareable.Remove(entry);
            Count--;
        }
    }
}
