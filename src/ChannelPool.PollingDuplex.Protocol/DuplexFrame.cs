namespace ChannelPool.PollingDuplex;

/// <summary>The kind of a frame: the kind byte of a binary frame, and the <c>type</c> of a text frame.</summary>
public enum DuplexFrameKind : byte
{
    /// <summary>A message with its sequence number.</summary>
    Message = 1,

    /// <summary>A gap: the server dropped <see cref="DuplexFrame.Missed"/> messages at this sequence number. Server to client only.</summary>
    Gap = 2,
}

/// <summary>
/// One frame of either encoding: a message with its sequence number, or a gap saying how many messages were dropped
/// (docs/polling-duplex-protocol.md, "Frames").
/// </summary>
public readonly struct DuplexFrame
{
    private DuplexFrame(DuplexFrameKind kind, long sequence, DuplexMessage? message, long missed)
    {
        Kind = kind;
        Sequence = sequence;
        Message = message;
        Missed = missed;
    }

    /// <summary>Gets whether the frame is a message or a gap.</summary>
    public DuplexFrameKind Kind { get; }

    /// <summary>Gets the frame's sequence number, from 1.</summary>
    public long Sequence { get; }

    /// <summary>Gets the message of a <see cref="DuplexFrameKind.Message"/> frame; <see langword="null"/> for a gap.</summary>
    public DuplexMessage? Message { get; }

    /// <summary>Gets how many messages a <see cref="DuplexFrameKind.Gap"/> frame stands for; 0 for a message.</summary>
    public long Missed { get; }

    /// <summary>Creates a message frame.</summary>
    /// <param name="sequence">The sequence number, from 1.</param>
    /// <param name="message">The message.</param>
    /// <returns>The frame.</returns>
    public static DuplexFrame ForMessage(long sequence, DuplexMessage message)
    {
        ArgumentNullException.ThrowIfNull(message);
        return new DuplexFrame(DuplexFrameKind.Message, sequence, message, 0);
    }

    /// <summary>Creates a gap frame: <paramref name="missed"/> messages were dropped at <paramref name="sequence"/>.</summary>
    /// <param name="sequence">The sequence number the gap takes, from 1.</param>
    /// <param name="missed">How many messages were dropped, at least 1.</param>
    /// <returns>The frame.</returns>
    public static DuplexFrame ForGap(long sequence, long missed) => new(DuplexFrameKind.Gap, sequence, null, missed);
}

/// <summary>What <see cref="DuplexFrameReader.TryRead"/> found.</summary>
public enum DuplexFrameReadStatus
{
    /// <summary>A whole frame was read.</summary>
    Frame,

    /// <summary>The buffer ends part-way through a frame (or is empty).</summary>
    NeedMoreData,

    /// <summary>The bytes cannot be a frame; the error says why.</summary>
    Malformed,

    /// <summary>The frame's payload is larger than allowed.</summary>
    TooLarge,
}
