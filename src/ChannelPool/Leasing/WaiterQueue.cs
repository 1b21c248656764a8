namespace ChannelPool;

/// <summary>
/// FIFO of waiting callers, linked through the waiters themselves so that a timed-out or cancelled waiter leaves in
/// O(1) and the count is always exact. Not thread-safe: the pool state's gate guards it.
/// </summary>
internal sealed class WaiterQueue<TChannel>
    where TChannel : class
{
    private Waiter<TChannel>? _head;
    private Waiter<TChannel>? _tail;

    public int Count { get; private set; }

    public void Enqueue(Waiter<TChannel> waiter)
    {
        waiter.Previous = _tail;
        waiter.Next = null;
        if (_tail is null)
        {
            _head = waiter;
        }
        else
        {
            _tail.Next = waiter;
        }

        _tail = waiter;
        waiter.IsQueued = true;
        Count++;
    }

    public Waiter<TChannel>? Dequeue()
    {
        var first = _head;
        if (first is not null)
        {
            Remove(first);
        }

        return first;
    }

    public void Remove(Waiter<TChannel> waiter)
    {
        if (waiter.Previous is null)
        {
            _head = waiter.Next;
        }
        else
        {
            waiter.Previous.Next = waiter.Next;
        }

        if (waiter.Next is null)
        {
            _tail = waiter.Previous;
        }
        else
        {
            waiter.Next.Previous = waiter.Previous;
        }

        waiter.Next = null;
        waiter.Previous = null;
        waiter.IsQueued = false;
        Count--;
    }

    /// <summary>Empties the queue and returns its waiters in FIFO order.</summary>
    public List<Waiter<TChannel>> DequeueAll()
    {
        var all = new List<Waiter<TChannel>>(Count);
        while (Dequeue() is { } waiter)
        {
            all.Add(waiter);
        }

        return all;
    }
}
