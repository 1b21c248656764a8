namespace ChannelPool;

// Eviction by the cleanup timer, and the end of a channel's close.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>Copies the idle channels out, oldest first, for the cleanup timer to inspect outside the gate.</summary>
    /// <returns>The idle channels, or <see langword="null"/> when there are none or a drain began.</returns>
    public PooledChannel<TChannel>[]? IdleChannels()
    {
        _gate.Enter();
        var idle = _disposed || _idle.Count == 0 ? null : _idle.ToArray();
        _gate.Exit();
        return idle;
    }

    /// <summary>Idle → evicted for the idle channels <paramref name="evict"/> picks. Returns them, and opens to start.</summary>
    public (List<PooledChannel<TChannel>> Evicted, int Opens) EvictIdle(Func<PooledChannel<TChannel>, bool> evict)
    {
        _gate.Enter();

        // Only channels still idle go; one leased meanwhile is checked again on its own lease path.
        var evicted = _idle.RemoveAll(evict);
        evicted.ForEach(MarkEvicted_NoLock);
        var opens = Refill_NoLock();
        Exit(nameof(EvictIdle));
        return (evicted, opens);
    }

    /// <summary>Evicted → gone: the close or abort finished.</summary>
    public void Closed(PooledChannel<TChannel> entry)
    {
        _gate.Enter();
        _evictedCount--;
        _closedTotal++;
        _open.Remove(entry);
        Exit(nameof(Closed));
    }
}
