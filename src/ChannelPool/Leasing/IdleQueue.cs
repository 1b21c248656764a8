namespace ChannelPool;

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
