namespace ChannelPool;

// Eviction by the cleanup timer (lifetime, usability, idle timeout), and the end of a channel's close.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>Copies the idle channels out, oldest first, for the cleanup timer to inspect outside the gate.</summary>
    /// <returns>The idle channels, or <see langword="null"/> when there are none or a drain began.</returns>
    public PooledChannel<TChannel>[]? IdleChannels()
    {
        _gate.Enter();
        var idle = _disposed || Resting.Count == 0 ? null : Resting.ToArray();
        _gate.Exit();
        return idle;
    }

    /// <summary>Idle → evicted for the idle channels <paramref name="evict"/> picks. Returns them, and opens to start.</summary>
    public (List<PooledChannel<TChannel>> Evicted, int Opens) EvictIdle(Func<PooledChannel<TChannel>, bool> evict)
    {
        _gate.Enter();

        // Only channels still idle go; one leased meanwhile is checked again on its own lease path.
        var evicted = Resting.RemoveAll(evict);
        evicted.ForEach(MarkEvicted_NoLock);
        var opens = Refill_NoLock();
        Exit(nameof(EvictIdle));
        return (evicted, opens);
    }

    /// <summary>
    /// Idle → evicted for channels idle longer than the idle timeout, oldest first, while more idle than the pool aims
    /// to keep (<see cref="IdleTarget_NoLock"/>). Lifetime and jitter are not touched: a channel past its deadline is
    /// <see cref="EvictIdle"/>'s, and one that is not keeps it.
    /// </summary>
    /// <returns>The channels to close; empty when the timeout is off, a drain began or nothing is surplus.</returns>
    public List<PooledChannel<TChannel>> TimeOutIdle()
    {
        _gate.Enter();
        var settings = _settings;
        var surplus = Resting.Count - IdleTarget_NoLock();
        if (_disposed || surplus <= 0 || settings.IdleTimeout == Timeout.InfiniteTimeSpan)
        {
            _gate.Exit();
            return [];
        }

        // The queue is in release order, so the channels idle longest are at its front and go first.
        var idleSince = _clock.Now - _clock.ToTimestampDelta(settings.IdleTimeout);
        var evicted = Resting.RemoveAll(entry => entry.IdleSince <= idleSince && surplus-- > 0);
        evicted.ForEach(MarkEvicted_NoLock);
        Exit(nameof(TimeOutIdle));
        return evicted;
    }

    /// <summary>
    /// Evicted → gone: the close or abort finished. Returns the clears that were waiting for this channel, the last one
    /// of a cleared generation, to complete.
    /// </summary>
    public List<TaskCompletionSource>? Closed(PooledChannel<TChannel> entry)
    {
        _gate.Enter();
        _evictedCount--;
        _closedTotal++;
        _open.Remove(entry);
        List<TaskCompletionSource>? cleared = null;
        if (entry.Generation < _generation && --_retiredOpen == 0)
        {
            cleared = _clearWaiters;
            _clearWaiters = null;
        }

        Exit(nameof(Closed));
        return cleared;
    }
}
