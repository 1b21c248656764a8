namespace ChannelPool.PollingDuplex;

/// <summary>How a session's frames are written on the wire. Chosen when the session opens.</summary>
public enum DuplexEncoding
{
    /// <summary>NDJSON: one JSON object per line; message payloads are JSON values. Readable, and drivable with curl.</summary>
    Text = 0,

    /// <summary>Length-prefixed binary frames; message payloads are any bytes.</summary>
    Binary = 1,
}

/// <summary>How many frames one poll response carries. Chosen when the session opens.</summary>
public enum PollingDuplexMode
{
    /// <summary>Exactly one frame per poll response: a round trip per message.</summary>
    SingleMessagePerPoll = 0,

    /// <summary>Every waiting frame, and any arriving within the server's batch window, streamed on one response.</summary>
    MultipleMessagesPerPoll = 1,
}

/// <summary>What a server does with a message when a session's pending buffer is full.</summary>
public enum DuplexOverflowPolicy
{
    /// <summary>The session faults; the client's next request is answered <c>410 session-faulted</c>.</summary>
    FaultSession = 0,

    /// <summary>The message is dropped, and a gap frame tells the client how many were.</summary>
    GapMarker = 1,
}
