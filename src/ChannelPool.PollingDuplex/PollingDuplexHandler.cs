namespace ChannelPool.PollingDuplex;

/// <summary>
/// The application's side of a polling duplex endpoint: it learns of sessions and their messages, and pushes messages
/// with <see cref="DuplexSession.Send"/>. One instance serves every session of its endpoint, from many threads at once.
/// </summary>
public abstract class PollingDuplexHandler
{
    /// <summary>Called when a session opens, before the client is answered.</summary>
    /// <param name="session">The new session.</param>
    /// <param name="cancellationToken">Cancelled if the client goes away.</param>
    /// <returns>A task that completes when the application is ready for the session.</returns>
    public virtual ValueTask OnSessionOpenedAsync(DuplexSession session, CancellationToken cancellationToken) => ValueTask.CompletedTask;

    /// <summary>
    /// Called once for each message the client sends, in order. Throw <see cref="DuplexMessageRejectedException"/> to
    /// refuse a message (the client is told, and does not send it again). Any other exception leaves the message
    /// unreceived, so the client may send it again.
    /// </summary>
    /// <param name="session">The session the message came on.</param>
    /// <param name="message">The message.</param>
    /// <param name="cancellationToken">Cancelled if the client goes away.</param>
    /// <returns>A task that completes when the message is handled.</returns>
    public abstract ValueTask OnMessageAsync(DuplexSession session, DuplexMessage message, CancellationToken cancellationToken);

    /// <summary>Called once when a session ends, for whatever reason.</summary>
    /// <param name="session">The session.</param>
    /// <param name="reason">Why it ended.</param>
    /// <returns>A task that completes when the application has let go of the session.</returns>
    public virtual ValueTask OnSessionEndedAsync(DuplexSession session, DuplexSessionEndReason reason) => ValueTask.CompletedTask;
}

/// <summary>Why a session ended.</summary>
public enum DuplexSessionEndReason
{
    /// <summary>The client closed it.</summary>
    ClosedByClient = 0,

    /// <summary>The application closed it with <see cref="DuplexSession.Close"/>.</summary>
    ClosedByServer = 1,

    /// <summary>No request arrived within the inactivity timeout.</summary>
    Expired = 2,

    /// <summary>Its pending buffer overflowed under the <see cref="DuplexOverflowPolicy.FaultSession"/> policy.</summary>
    Overflow = 3,

    /// <summary>The server is shutting down.</summary>
    ServerShutdown = 4,

    /// <summary>
    /// It had not polled yet when <see cref="PollingDuplexOptions.MaxPendingSessions"/> was reached, and a newer open
    /// took its place: the oldest never-polled session goes first.
    /// </summary>
    Evicted = 5,

    /// <summary>
    /// The sign-in of its requests expired, on an endpoint with
    /// <see cref="PollingDuplexOptions.CloseOnAuthenticationExpiration"/>.
    /// </summary>
    AuthenticationExpired = 6,

    /// <summary>
    /// The endpoint held <see cref="PollingDuplexOptions.MaxConcurrentSessions"/> sessions when a user (or address) with
    /// fewer opened one, and this was the longest-idle session of the user (or address) holding the most: it gave way,
    /// so sessions left behind cannot lock others out.
    /// </summary>
    Displaced = 7,
}

/// <summary>What happened to a message handed to <see cref="DuplexSession.Send"/>.</summary>
public enum DuplexSendResult
{
    /// <summary>Queued for delivery.</summary>
    Queued = 0,

    /// <summary>The buffer was full: the message was dropped and the client will see a gap.</summary>
    Dropped = 1,

    /// <summary>The buffer was full: the session faulted, and the message was not queued.</summary>
    SessionFaulted = 2,

    /// <summary>The session had already ended.</summary>
    SessionEnded = 3,
}

/// <summary>
/// Thrown by a <see cref="PollingDuplexHandler"/> to refuse a client's message. The client receives
/// <c>422 message-rejected</c> with <see cref="Exception.Message"/>, and the message counts as received.
/// </summary>
public sealed class DuplexMessageRejectedException : Exception
{
    /// <summary>Initializes a new instance with a generic reason.</summary>
    public DuplexMessageRejectedException()
        : this("The message was rejected.")
    {
    }

    /// <summary>Initializes a new instance.</summary>
    /// <param name="message">Why the message was refused, for the client.</param>
    public DuplexMessageRejectedException(string message)
        : base(message)
    {
    }

    /// <summary>Initializes a new instance.</summary>
    /// <param name="message">Why the message was refused, for the client.</param>
    /// <param name="innerException">The cause.</param>
    public DuplexMessageRejectedException(string message, Exception? innerException)
        : base(message, innerException)
    {
    }
}
