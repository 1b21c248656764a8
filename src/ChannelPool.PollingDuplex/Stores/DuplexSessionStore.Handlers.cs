namespace ChannelPool.PollingDuplex.Stores;

/// <summary>What a store needs to run an <see cref="AsyncPollingDuplexHandler"/>: its sends go through the store.</summary>
public abstract partial class DuplexSessionStore
{
    /// <summary>
    /// Queues <paramref name="message"/> for the session <paramref name="sessionId"/>, from the server side, on any node:
    /// within the session's limits (<see cref="PollingDuplexOptions.MaxPendingMessagesPerSession"/>,
    /// <see cref="PollingDuplexOptions.MaxPendingBytesPerSession"/>, the overflow policy), as
    /// <see cref="DuplexSession.Send"/> queues in memory. Never counts as the session's activity.
    /// </summary>
    /// <param name="sessionId">The session.</param>
    /// <param name="message">The message; a text session takes JSON messages only.</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>What happened to the message.</returns>
    /// <exception cref="ArgumentException">A raw-bytes message for a text session, or one larger than <see cref="PollingDuplexOptions.MaxMessageSize"/>.</exception>
    protected internal abstract ValueTask<DuplexSendResult> SendAsync(string sessionId, DuplexMessage message, CancellationToken cancellationToken);

    /// <summary>Ends the session <paramref name="sessionId"/> from the server side (<see cref="DuplexSessionEndReason.ClosedByServer"/>), from any node.</summary>
    /// <param name="sessionId">The session.</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>A task that completes when the session has ended, or was already gone.</returns>
    protected internal abstract ValueTask CloseSessionAsync(string sessionId, CancellationToken cancellationToken);

    /// <summary>Makes <paramref name="handler"/> this store's application: its <see cref="AsyncPollingDuplexHandler.SendAsync"/> goes through this store.</summary>
    /// <param name="handler">The handler, serving this endpoint only.</param>
    /// <exception cref="InvalidOperationException">The handler already serves another endpoint.</exception>
    protected void AttachHandler(AsyncPollingDuplexHandler handler)
    {
        ArgumentNullException.ThrowIfNull(handler);
        handler.Attach(this);
    }

    /// <summary>Creates the handle an <see cref="AsyncPollingDuplexHandler"/> is given for a session of this store.</summary>
    /// <param name="sessionId">The session's id.</param>
    /// <param name="userId">Its user, or null.</param>
    /// <param name="encoding">Its encoding.</param>
    /// <param name="mode">Its mode.</param>
    /// <returns>A handle whose sends go through this store.</returns>
    protected DuplexSessionHandle CreateSessionHandle(string sessionId, string? userId, DuplexEncoding encoding, PollingDuplexMode mode)
    {
        ArgumentException.ThrowIfNullOrEmpty(sessionId);
        return new DuplexSessionHandle(this, sessionId, userId, encoding, mode);
    }
}
