using Microsoft.AspNetCore.Http;

namespace ChannelPool.PollingDuplex.Stores;

/// <summary>
/// One outstanding poll, as its store keeps it: the endpoint's long-poll responder takes frames from it until the
/// poll has something to answer, and ends it when the response is done.
/// </summary>
public abstract class DuplexPoll
{
    /// <summary>Initializes a poll of the session <paramref name="sessionId"/>.</summary>
    /// <param name="sessionId">The session's id.</param>
    /// <param name="encoding">The session's encoding: the response's content type.</param>
    /// <param name="mode">The session's mode: one frame per response, or every frame ready within the batch window.</param>
    protected DuplexPoll(string sessionId, DuplexEncoding encoding, PollingDuplexMode mode)
    {
        ArgumentException.ThrowIfNullOrEmpty(sessionId);
        SessionId = sessionId;
        Encoding = encoding;
        Mode = mode;
    }

    /// <summary>Gets the polled session's id.</summary>
    public string SessionId { get; }

    /// <summary>Gets the polled session's encoding.</summary>
    public DuplexEncoding Encoding { get; }

    /// <summary>Gets the polled session's mode.</summary>
    public PollingDuplexMode Mode { get; }

    /// <summary>Gets or sets the request the poll answers, so a store can cut off a response stuck behind a client that stopped reading.</summary>
    internal HttpContext? Context { get; set; }

    /// <summary>Gets or sets whether the response has started, so errors can no longer be sent as a status.</summary>
    internal bool Responding { get; set; }

    /// <summary>
    /// Takes up to <paramref name="maxFrames"/> frames after the ones this poll has taken (or its acknowledgement),
    /// marking them sent. With nothing to take, returns <see cref="DuplexTakeStatus.Waiting"/> and a task that completes
    /// when there may be: a frame queued, a newer poll, the session's end. The task must be armed before the store
    /// looked, so nothing that happens after the look is missed.
    /// </summary>
    /// <param name="frames">Where the frames go, in sequence order.</param>
    /// <param name="maxFrames">The most frames to take, at least 1.</param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>What the poll found.</returns>
    protected internal abstract ValueTask<DuplexTakeResult> TakeAsync(List<DuplexFrame> frames, int maxFrames, CancellationToken cancellationToken);

    /// <summary>
    /// Ends the poll: it stops counting as the session's outstanding poll (unless a newer one replaced it), and counts as
    /// activity. Called once, whatever the outcome; it does not throw for a store that went away.
    /// </summary>
    /// <param name="cancellationToken">Stops waiting for the store; the poll then stops counting at its own deadline.</param>
    /// <returns>A task that completes when the poll has ended.</returns>
    protected internal abstract ValueTask EndAsync(CancellationToken cancellationToken);
}
