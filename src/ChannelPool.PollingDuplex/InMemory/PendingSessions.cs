namespace ChannelPool.PollingDuplex;

/// <summary>
/// The in-memory sessions that have opened and not yet polled, oldest first: what <c>MaxPendingSessions</c> counts, the
/// order in which a full endpoint evicts them, and the order in which their first-poll deadlines fall due. Only a
/// session's first poll (or its end) takes it out.
/// </summary>
/// <remarks>
/// Eviction rather than refusal: refusing the newcomer let 1,024 opens that never poll lock every client out until the
/// first-poll deadline, and a flood of about 70 opens a second keep it so. Evicting the oldest never-polled session
/// costs a flood its own earlier opens, and a client that polls at once after opening is evicted only if
/// <c>MaxPendingSessions</c> opens arrive between its open and its poll.
/// </remarks>
internal sealed class PendingSessions(int capacity)
{
    private readonly LinkedList<DuplexSession> _order = new();
    private readonly Lock _lock = new();
    private int _count;

    public int Count => Volatile.Read(ref _count);

    /// <summary>
    /// Adds a session that just opened. Past capacity, takes out the oldest one that has not begun a poll and returns it,
    /// for the caller to end as evicted.
    /// </summary>
    public DuplexSession? Add(DuplexSession session)
    {
        using (_lock.EnterScope())
        {
            session.PendingNode = _order.AddLast(session);
            _count = _order.Count;
            while (_order.Count > capacity && _order.First is { } oldest)
            {
                Unlink_NoLock(oldest.Value);

                // One whose first poll is under way is leaving anyway (its poll takes it out next): not a victim.
                if (!oldest.Value.HasPolled)
                {
                    return oldest.Value;
                }
            }

            return null;
        }
    }

    /// <summary>Takes a session out because it began its first poll, or ended. Returns false if it was already out.</summary>
    public bool Remove(DuplexSession session)
    {
        using (_lock.EnterScope())
        {
            return Unlink_NoLock(session);
        }
    }

    /// <summary>Takes out, oldest first, the sessions that opened at or before <paramref name="openedBy"/>: their first-poll deadline has passed.</summary>
    public List<DuplexSession>? TakeOpenedBy(long openedBy)
    {
        List<DuplexSession>? due = null;
        using (_lock.EnterScope())
        {
            while (_order.First is { } oldest && oldest.Value.OpenedAt <= openedBy)
            {
                Unlink_NoLock(oldest.Value);
                (due ??= []).Add(oldest.Value);
            }
        }

        return due;
    }

    private bool Unlink_NoLock(DuplexSession session)
    {
        if (session.PendingNode is not { } node)
        {
            return false;
        }

        _order.Remove(node);
        session.PendingNode = null;
        _count = _order.Count;
        return true;
    }
}
