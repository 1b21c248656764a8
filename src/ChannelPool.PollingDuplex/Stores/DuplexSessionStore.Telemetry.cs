namespace ChannelPool.PollingDuplex.Stores;

/// <summary>
/// What a store records on the endpoint's <c>pollingduplex.*</c> instruments. The endpoint code records polls and
/// received messages for every store; opens, ends, deliveries and drops happen inside a store, so a store records them
/// here, and the same instruments mean the same on every store.
/// </summary>
public abstract partial class DuplexSessionStore
{
    // Pending in the high 32 bits, active in the low; -1 until a store reports. One field, so the gauge never reads a torn pair.
    private long _reportedSessionCounts = -1;

    private (int Pending, int Active)? ReportedSessionCounts =>
        Volatile.Read(ref _reportedSessionCounts) is var packed and >= 0 ? ((int)(packed >> 32), (int)packed) : null;

    /// <summary>Records a session opened: <c>pollingduplex.sessions.opened</c>.</summary>
    protected void RecordSessionOpened() => Metrics.Opened();

    /// <summary>Records a session ended: <c>pollingduplex.sessions.ended</c>, tagged with the reason.</summary>
    /// <param name="reason">Why it ended.</param>
    protected void RecordSessionEnded(DuplexSessionEndReason reason) => Metrics.Ended(reason);

    /// <summary>Records frames a poll response carried: <c>pollingduplex.messages.delivered</c> and <c>.redelivered</c>.</summary>
    /// <param name="delivered">Frames sent for the first time.</param>
    /// <param name="redelivered">Frames sent again, because no poll acknowledged them.</param>
    protected void RecordFramesSent(long delivered, long redelivered)
    {
        if (delivered > 0)
        {
            Metrics.Delivered(delivered);
        }

        if (redelivered > 0)
        {
            Metrics.Redelivered(redelivered);
        }
    }

    /// <summary>Records messages that did not fit a session's limits: <c>pollingduplex.messages.dropped</c>.</summary>
    /// <param name="count">How many.</param>
    protected void RecordMessagesDropped(long count)
    {
        if (count > 0)
        {
            Metrics.Dropped(count);
        }
    }

    /// <summary>
    /// Reports the endpoint's sessions by state for the <c>pollingduplex.sessions</c> gauge, for a store that cannot count
    /// them when the gauge is read (a remote one counts now and then, and reports).
    /// </summary>
    /// <param name="pending">Sessions that have not polled yet.</param>
    /// <param name="active">Sessions that have.</param>
    protected void ReportSessionCounts(int pending, int active)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(pending);
        ArgumentOutOfRangeException.ThrowIfNegative(active);
        Volatile.Write(ref _reportedSessionCounts, ((long)pending << 32) | (uint)active);
    }
}
