using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// The application's side of a polling duplex endpoint on any store: in this process (<c>MapPollingDuplex</c>) or shared
/// by many nodes (<c>MapPollingDuplexOnRedis</c> in ChannelPool.PollingDuplex.Redis). It is given each session as a
/// <see cref="DuplexSessionHandle"/>, and every send goes through the endpoint's store, so a message reaches its
/// session whichever node holds the session's poll, and <see cref="SendAsync"/> pushes to any session from anywhere.
/// One instance serves every session of its endpoint, from many threads (and, on a shared store, on every node).
/// </summary>
/// <remarks>
/// On the in-memory store a send is <see cref="DuplexSession.Send"/>, completed at once: the asynchronous API costs that
/// store no allocation and no thread switch. A handler written to <see cref="PollingDuplexHandler"/> keeps working on
/// one node; this one runs unchanged on one node or many.
/// </remarks>
public abstract class AsyncPollingDuplexHandler : PollingDuplexHandler
{
    private static readonly object HandleKey = new();
    private DuplexSessionStore? _store;

    /// <summary>Called when a session opens, before the client is answered. Throwing refuses the session (<c>500 handler-failed</c>).</summary>
    /// <param name="session">The new session.</param>
    /// <param name="cancellationToken">Cancelled if the client goes away.</param>
    /// <returns>A task that completes when the application is ready for the session.</returns>
    public virtual ValueTask OnSessionOpenedAsync(DuplexSessionHandle session, CancellationToken cancellationToken) => ValueTask.CompletedTask;

    /// <summary>
    /// Called once for each message the client sends, in order. Throw <see cref="DuplexMessageRejectedException"/> to
    /// refuse a message (the client is told, and does not send it again). Any other exception leaves the message
    /// unreceived, so the client may send it again. On a shared store, a node that dies while this runs leaves the message
    /// unreceived too, and the client's retry runs it again on another node: make its effects idempotent by
    /// (<see cref="DuplexSessionHandle.Id"/>, sequence) where that matters.
    /// </summary>
    /// <param name="session">The session the message came on.</param>
    /// <param name="message">The message.</param>
    /// <param name="cancellationToken">Cancelled if the client goes away.</param>
    /// <returns>A task that completes when the message is handled.</returns>
    public abstract ValueTask OnMessageAsync(DuplexSessionHandle session, DuplexMessage message, CancellationToken cancellationToken);

    /// <summary>
    /// Called once when a session ends, on the node that ended it; on a shared store a session that expired is reported
    /// by whichever node notices first (within a few seconds), with what was recorded of it.
    /// </summary>
    /// <param name="session">The session.</param>
    /// <param name="reason">Why it ended.</param>
    /// <returns>A task that completes when the application has let go of the session.</returns>
    public virtual ValueTask OnSessionEndedAsync(DuplexSessionHandle session, DuplexSessionEndReason reason) => ValueTask.CompletedTask;

    /// <summary>
    /// Queues <paramref name="message"/> for the session <paramref name="sessionId"/> through the endpoint's store, from
    /// anywhere: a background service, another session's message, another node. The session's limits and overflow
    /// policy apply as for <see cref="DuplexSession.Send"/>; it never counts as the session's activity.
    /// </summary>
    /// <param name="sessionId">The session's id.</param>
    /// <param name="message">The message; a text session takes JSON messages only.</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>What happened to the message; <see cref="DuplexSendResult.SessionEnded"/> for a session that is gone or never was.</returns>
    /// <exception cref="InvalidOperationException">The handler is not mapped to an endpoint yet.</exception>
    /// <exception cref="ArgumentException">A raw-bytes message for a text session, or one larger than the endpoint's MaxMessageSize.</exception>
    /// <exception cref="DuplexStoreUnavailableException">A shared store did not answer; nothing was queued.</exception>
    public ValueTask<DuplexSendResult> SendAsync(string sessionId, DuplexMessage message, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(sessionId);
        ArgumentNullException.ThrowIfNull(message);
        return Store.SendAsync(sessionId, message, cancellationToken);
    }

    /// <inheritdoc />
    public sealed override ValueTask OnSessionOpenedAsync(DuplexSession session, CancellationToken cancellationToken) =>
        OnSessionOpenedAsync(HandleOf(session), cancellationToken);

    /// <inheritdoc />
    public sealed override ValueTask OnMessageAsync(DuplexSession session, DuplexMessage message, CancellationToken cancellationToken) =>
        OnMessageAsync(HandleOf(session), message, cancellationToken);

    /// <inheritdoc />
    public sealed override ValueTask OnSessionEndedAsync(DuplexSession session, DuplexSessionEndReason reason) =>
        OnSessionEndedAsync(HandleOf(session), reason);

    /// <summary>Binds the handler to the one endpoint store its sends go through.</summary>
    internal void Attach(DuplexSessionStore store)
    {
        if (Interlocked.CompareExchange(ref _store, store, null) is { } other && other != store)
        {
            throw new InvalidOperationException(
                $"This {GetType().Name} already serves the endpoint '{other.Endpoint}', so it cannot serve '{store.Endpoint}' too: its sends would not know which endpoint's sessions they mean. Map each endpoint with its own instance (do not register the handler as a singleton for several endpoints).");
        }
    }

    private DuplexSessionStore Store => _store
        ?? throw new InvalidOperationException($"{GetType().Name} is not mapped to an endpoint yet: map it (MapPollingDuplex<{GetType().Name}>, or MapPollingDuplexOnRedis) before it sends.");

    // One handle per in-memory session, kept with the session, so a message costs no allocation for it.
    private static DuplexSessionHandle HandleOf(DuplexSession session)
    {
        ArgumentNullException.ThrowIfNull(session);
        return (DuplexSessionHandle)session.Items.GetOrAdd(HandleKey, static (_, s) => new DuplexSessionHandle(s), session)!;
    }
}
