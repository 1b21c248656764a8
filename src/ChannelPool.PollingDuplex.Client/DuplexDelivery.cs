using ChannelPool.PollingDuplex;

namespace ChannelPool.PollingDuplex.Client;

/// <summary>
/// One item received on a session, in sequence: a message, or a gap saying how many messages the server had to drop
/// because the session's buffer was full.
/// </summary>
/// <param name="Sequence">The item's sequence number: each is one more than the last.</param>
/// <param name="Message">The message, or <see langword="null"/> for a gap.</param>
/// <param name="Missed">For a gap, how many messages were lost at this point; otherwise 0.</param>
public readonly record struct DuplexDelivery(long Sequence, DuplexMessage? Message, long Missed)
{
    /// <summary>Gets whether this item is a gap rather than a message.</summary>
    public bool IsGap => Message is null;
}

/// <summary>Where a client session is in its life.</summary>
public enum DuplexClientSessionState
{
    /// <summary>Open: polling and able to send.</summary>
    Open = 0,

    /// <summary>Closed by the application.</summary>
    Closed = 1,

    /// <summary>Ended by the server or lost; <see cref="DuplexClientSession.Fault"/> says why.</summary>
    Faulted = 2,
}
