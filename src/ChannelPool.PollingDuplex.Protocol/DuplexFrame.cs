namespace ChannelPool.PollingDuplex;

/// <summary>The kind byte of a binary frame, and the <c>type</c> of a text frame.</summary>
internal enum DuplexFrameKind : byte
{
    Message = 1,
    Gap = 2,
}

/// <summary>One frame read off the wire: a message with its sequence number, or a gap saying how many were missed.</summary>
internal readonly record struct DuplexFrame(DuplexFrameKind Kind, long Sequence, DuplexMessage? Message, long Missed);

/// <summary>What <see cref="DuplexFrameReader.TryRead"/> found.</summary>
internal enum FrameReadStatus
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
