namespace ChannelPool.PollingDuplex.Stores;

/// <summary>What a session id and token found.</summary>
public enum DuplexLookupStatus
{
    /// <summary>The session exists and the token is its own.</summary>
    Found = 0,

    /// <summary>The session exists (or ended recently), but the token is not its own: <c>403 invalid-token</c>.</summary>
    InvalidToken = 1,

    /// <summary>The session ended; <see cref="DuplexSessionLookup.EndReason"/> says why: <c>410</c>.</summary>
    Ended = 2,

    /// <summary>No such session, or it ended too long ago to remember: <c>404 unknown-session</c>.</summary>
    Unknown = 3,

    /// <summary>
    /// The token is the session's, but the request's user is not the one who opened it (or one of them is anonymous):
    /// <c>403 wrong-user</c>. Nothing about the session changed.
    /// </summary>
    WrongUser = 4,
}

/// <summary>What a session id and token found: the session, or why the request cannot reach it.</summary>
public readonly struct DuplexSessionLookup
{
    private DuplexSessionLookup(DuplexLookupStatus status, DuplexSessionEndReason? endReason, DuplexStoreSession? session)
    {
        Status = status;
        EndReason = endReason;
        Session = session;
    }

    /// <summary>Gets a lookup whose token is not the session's.</summary>
    public static DuplexSessionLookup InvalidToken => new(DuplexLookupStatus.InvalidToken, null, null);

    /// <summary>Gets a lookup of a session nobody knows.</summary>
    public static DuplexSessionLookup Unknown => new(DuplexLookupStatus.Unknown, null, null);

    /// <summary>Gets a lookup whose token is the session's but whose user is not.</summary>
    public static DuplexSessionLookup WrongUser => new(DuplexLookupStatus.WrongUser, null, null);

    /// <summary>Gets what the lookup found.</summary>
    public DuplexLookupStatus Status { get; }

    /// <summary>Gets why the session ended, when <see cref="Status"/> is <see cref="DuplexLookupStatus.Ended"/>.</summary>
    public DuplexSessionEndReason? EndReason { get; }

    /// <summary>Gets the session <see cref="DuplexSessionStore.FindAsync"/> found.</summary>
    public DuplexStoreSession? Session { get; }

    /// <summary>Creates a lookup that found the session.</summary>
    /// <param name="session">The session, for <see cref="DuplexSessionStore.FindAsync"/>; other operations need none.</param>
    /// <returns>The lookup.</returns>
    public static DuplexSessionLookup Found(DuplexStoreSession? session = null) => new(DuplexLookupStatus.Found, null, session);

    /// <summary>Creates a lookup of a session that ended.</summary>
    /// <param name="reason">Why it ended.</param>
    /// <returns>The lookup.</returns>
    public static DuplexSessionLookup Ended(DuplexSessionEndReason reason) => new(DuplexLookupStatus.Ended, reason, null);

    internal static DuplexSessionLookup RequireFailure(DuplexSessionLookup lookup) => lookup.Status != DuplexLookupStatus.Found
        ? lookup
        : throw new ArgumentException("A failed lookup cannot be Found.", nameof(lookup));
}

/// <summary>How an open ended.</summary>
public enum DuplexOpenStatus
{
    /// <summary>The session is open: <c>201</c> with its id and token.</summary>
    Opened = 0,

    /// <summary><see cref="PollingDuplexOptions.MaxConcurrentSessions"/> sessions are open, or the server is stopping: <c>503 too-many-sessions</c>.</summary>
    TooManySessions = 1,

    /// <summary>
    /// <see cref="PollingDuplexOptions.MaxPendingSessions"/> sessions have not polled yet and none could be evicted (each
    /// began its first poll meanwhile): <c>503 too-many-pending-sessions</c>. Stores evict the oldest never-polled
    /// session rather than answer this, so it is rare.
    /// </summary>
    TooManyPendingSessions = 2,

    /// <summary>The application failed to open the session, which was ended: <c>500 handler-failed</c>.</summary>
    Failed = 3,

    /// <summary>
    /// The user (or, when anonymous, the remote address) already holds <see cref="PollingDuplexOptions.MaxSessionsPerUser"/>
    /// (<see cref="PollingDuplexOptions.MaxSessionsPerAddress"/>) sessions: <c>429 too-many-user-sessions</c>.
    /// </summary>
    TooManyUserSessions = 4,
}

/// <summary>What <see cref="DuplexSessionStore.OpenAsync"/> did.</summary>
public readonly struct DuplexOpenResult
{
    private DuplexOpenResult(DuplexOpenStatus status, string? sessionId, string? token, Exception? error)
    {
        Status = status;
        SessionId = sessionId;
        Token = token;
        Error = error;
    }

    /// <summary>Gets a refusal: the endpoint holds as many sessions as it allows.</summary>
    public static DuplexOpenResult TooManySessions => new(DuplexOpenStatus.TooManySessions, null, null, null);

    /// <summary>Gets a refusal: too many sessions have opened and not yet polled.</summary>
    public static DuplexOpenResult TooManyPendingSessions => new(DuplexOpenStatus.TooManyPendingSessions, null, null, null);

    /// <summary>Gets a refusal: the user (or address) holds as many sessions as the endpoint allows one.</summary>
    public static DuplexOpenResult TooManyUserSessions => new(DuplexOpenStatus.TooManyUserSessions, null, null, null);

    /// <summary>Gets how the open ended.</summary>
    public DuplexOpenStatus Status { get; }

    /// <summary>Gets the new session's id, when it opened (or failed in the application).</summary>
    public string? SessionId { get; }

    /// <summary>Gets the new session's token, shown to the client once, when it opened.</summary>
    public string? Token { get; }

    /// <summary>Gets what the application threw, when it failed to open the session.</summary>
    public Exception? Error { get; }

    /// <summary>Creates the result of a session that opened.</summary>
    /// <param name="sessionId">Its id.</param>
    /// <param name="token">Its token.</param>
    /// <returns>The result.</returns>
    public static DuplexOpenResult Opened(string sessionId, string token)
    {
        ArgumentException.ThrowIfNullOrEmpty(sessionId);
        ArgumentException.ThrowIfNullOrEmpty(token);
        return new(DuplexOpenStatus.Opened, sessionId, token, null);
    }

    /// <summary>Creates the result of a session the application failed to open, and that the store has ended.</summary>
    /// <param name="sessionId">Its id.</param>
    /// <param name="error">What the application threw; the endpoint logs it.</param>
    /// <returns>The result.</returns>
    public static DuplexOpenResult Failed(string sessionId, Exception error)
    {
        ArgumentException.ThrowIfNullOrEmpty(sessionId);
        ArgumentNullException.ThrowIfNull(error);
        return new(DuplexOpenStatus.Failed, sessionId, null, error);
    }
}

/// <summary>What became of one client message.</summary>
public enum DuplexReceiveStatus
{
    /// <summary>Received: the application (or the command) took it.</summary>
    Accepted = 0,

    /// <summary>Received before, by another request of the session; skipped.</summary>
    AlreadyReceived = 1,

    /// <summary>Not the next sequence number: <c>409 out-of-order</c>.</summary>
    OutOfOrder = 2,

    /// <summary>Refused by the application, and counted received: <c>422 message-rejected</c>.</summary>
    Rejected = 3,

    /// <summary>The application failed on it; not received, so the client may send it again: <c>500 handler-failed</c>.</summary>
    Failed = 4,

    /// <summary>The session could not be reached; <see cref="DuplexReceiveResult.Lookup"/> says why.</summary>
    LookupFailed = 5,
}

/// <summary>What <see cref="DuplexSessionStore.ReceiveAsync"/> did with one client message.</summary>
public readonly struct DuplexReceiveResult
{
    private DuplexReceiveResult(DuplexReceiveStatus status, long received, string? rejection, Exception? error, DuplexSessionLookup lookup, string? rejectionCode = null)
    {
        RejectionCode = rejectionCode;
        Status = status;
        Received = received;
        Rejection = rejection;
        Error = error;
        Lookup = lookup;
    }

    /// <summary>Gets what became of the message.</summary>
    public DuplexReceiveStatus Status { get; }

    /// <summary>Gets the sequence number of the session's last received message, after this one.</summary>
    public long Received { get; }

    /// <summary>Gets why the application refused the message, for the client.</summary>
    public string? Rejection { get; }

    /// <summary>
    /// Gets the problem code of a refusal the store made itself for a limit (such as
    /// <see cref="DuplexWire.Codes.TooManySubscriptions"/>); null for the application's own, <c>message-rejected</c>.
    /// </summary>
    public string? RejectionCode { get; }

    /// <summary>Gets what the application threw.</summary>
    public Exception? Error { get; }

    /// <summary>Gets why the session could not be reached; <see cref="DuplexLookupStatus.Found"/> otherwise.</summary>
    public DuplexSessionLookup Lookup { get; }

    /// <summary>Creates the result of a received message.</summary>
    /// <param name="received">Its sequence number, now the session's last received.</param>
    /// <returns>The result.</returns>
    public static DuplexReceiveResult Accepted(long received) => new(DuplexReceiveStatus.Accepted, received, null, null, DuplexSessionLookup.Found());

    /// <summary>Creates the result of a message received before.</summary>
    /// <param name="received">The session's last received sequence number.</param>
    /// <returns>The result.</returns>
    public static DuplexReceiveResult AlreadyReceived(long received) => new(DuplexReceiveStatus.AlreadyReceived, received, null, null, DuplexSessionLookup.Found());

    /// <summary>Creates the result of a message that is not the next one.</summary>
    /// <param name="received">The session's last received sequence number.</param>
    /// <returns>The result.</returns>
    public static DuplexReceiveResult OutOfOrder(long received) => new(DuplexReceiveStatus.OutOfOrder, received, null, null, DuplexSessionLookup.Found());

    /// <summary>Creates the result of a message the application refused, which counts as received.</summary>
    /// <param name="received">Its sequence number, now the session's last received.</param>
    /// <param name="rejection">Why, for the client.</param>
    /// <returns>The result.</returns>
    public static DuplexReceiveResult Rejected(long received, string rejection)
    {
        ArgumentNullException.ThrowIfNull(rejection);
        return new(DuplexReceiveStatus.Rejected, received, rejection, null, DuplexSessionLookup.Found());
    }

    /// <summary>Creates the result of a message the store refused for one of the endpoint's limits; it counts as received.</summary>
    /// <param name="received">Its sequence number, now the session's last received.</param>
    /// <param name="rejection">Why, for the client.</param>
    /// <param name="code">The limit's problem code, such as <see cref="DuplexWire.Codes.TooManySubscriptions"/>.</param>
    /// <returns>The result.</returns>
    public static DuplexReceiveResult Rejected(long received, string rejection, string code)
    {
        ArgumentNullException.ThrowIfNull(rejection);
        ArgumentException.ThrowIfNullOrEmpty(code);
        return new(DuplexReceiveStatus.Rejected, received, rejection, null, DuplexSessionLookup.Found(), code);
    }

    /// <summary>Creates the result of a message the application failed on; it is not received.</summary>
    /// <param name="received">The session's last received sequence number, before this message.</param>
    /// <param name="error">What the application threw; the endpoint logs it.</param>
    /// <returns>The result.</returns>
    public static DuplexReceiveResult Failed(long received, Exception error)
    {
        ArgumentNullException.ThrowIfNull(error);
        return new(DuplexReceiveStatus.Failed, received, null, error, DuplexSessionLookup.Found());
    }

    /// <summary>Creates the result of a message whose session could not be reached.</summary>
    /// <param name="lookup">Why not; not <see cref="DuplexLookupStatus.Found"/>.</param>
    /// <returns>The result.</returns>
    public static DuplexReceiveResult LookupFailed(DuplexSessionLookup lookup) => new(DuplexReceiveStatus.LookupFailed, 0, null, null, DuplexSessionLookup.RequireFailure(lookup));
}

/// <summary>What <see cref="DuplexSessionStore.BeginPollAsync"/> did.</summary>
public readonly struct DuplexPollStart
{
    private DuplexPollStart(DuplexPoll? poll, bool ackBeyondSent, DuplexSessionLookup lookup)
    {
        Poll = poll;
        AckBeyondSent = ackBeyondSent;
        Lookup = lookup;
    }

    /// <summary>Gets the refusal of an acknowledgement beyond the highest sequence number sent: <c>400 bad-ack</c>.</summary>
    public static DuplexPollStart BeyondSent => new(null, ackBeyondSent: true, DuplexSessionLookup.Found());

    /// <summary>Gets the poll, when it started.</summary>
    public DuplexPoll? Poll { get; }

    /// <summary>Gets whether the acknowledgement was beyond what was sent, so the poll did not start.</summary>
    public bool AckBeyondSent { get; }

    /// <summary>Gets why the session could not be reached; <see cref="DuplexLookupStatus.Found"/> otherwise.</summary>
    public DuplexSessionLookup Lookup { get; }

    /// <summary>Creates the result of a poll that started.</summary>
    /// <param name="poll">The poll.</param>
    /// <returns>The result.</returns>
    public static DuplexPollStart Started(DuplexPoll poll)
    {
        ArgumentNullException.ThrowIfNull(poll);
        return new(poll, ackBeyondSent: false, DuplexSessionLookup.Found());
    }

    /// <summary>Creates the result of a poll whose session could not be reached.</summary>
    /// <param name="lookup">Why not; not <see cref="DuplexLookupStatus.Found"/>.</param>
    /// <returns>The result.</returns>
    public static DuplexPollStart LookupFailed(DuplexSessionLookup lookup) => new(null, ackBeyondSent: false, DuplexSessionLookup.RequireFailure(lookup));
}

/// <summary>What a poll found when it looked for frames.</summary>
public enum DuplexTakeStatus
{
    /// <summary>Frames were taken.</summary>
    Frames = 0,

    /// <summary>Nothing to take yet; <see cref="DuplexTakeResult.Wake"/> completes when there may be.</summary>
    Waiting = 1,

    /// <summary>A newer poll of the session replaced this one: <c>409 poll-superseded</c>.</summary>
    Superseded = 2,

    /// <summary>The session could not be reached (it ended, most likely); <see cref="DuplexTakeResult.Lookup"/> says why.</summary>
    LookupFailed = 3,
}

/// <summary>What <see cref="DuplexPoll.TakeAsync"/> found.</summary>
public readonly struct DuplexTakeResult
{
    private DuplexTakeResult(DuplexTakeStatus status, Task? wake, DuplexSessionLookup lookup)
    {
        Status = status;
        Wake = wake;
        Lookup = lookup;
    }

    /// <summary>Gets the result of a take that found frames.</summary>
    public static DuplexTakeResult Frames => new(DuplexTakeStatus.Frames, null, DuplexSessionLookup.Found());

    /// <summary>Gets the result of a poll that a newer one replaced.</summary>
    public static DuplexTakeResult Superseded => new(DuplexTakeStatus.Superseded, null, DuplexSessionLookup.Found());

    /// <summary>Gets what the poll found.</summary>
    public DuplexTakeStatus Status { get; }

    /// <summary>Gets the task that completes when there may be something to take, when <see cref="Status"/> is <see cref="DuplexTakeStatus.Waiting"/>.</summary>
    public Task? Wake { get; }

    /// <summary>Gets why the session could not be reached; <see cref="DuplexLookupStatus.Found"/> otherwise.</summary>
    public DuplexSessionLookup Lookup { get; }

    /// <summary>Creates the result of a take that found nothing yet.</summary>
    /// <param name="wake">Completes when there may be something: armed before the store looked.</param>
    /// <returns>The result.</returns>
    public static DuplexTakeResult Waiting(Task wake)
    {
        ArgumentNullException.ThrowIfNull(wake);
        return new(DuplexTakeStatus.Waiting, wake, DuplexSessionLookup.Found());
    }

    /// <summary>Creates the result of a take whose session could not be reached.</summary>
    /// <param name="lookup">Why not; not <see cref="DuplexLookupStatus.Found"/>.</param>
    /// <returns>The result.</returns>
    public static DuplexTakeResult LookupFailed(DuplexSessionLookup lookup) => new(DuplexTakeStatus.LookupFailed, null, DuplexSessionLookup.RequireFailure(lookup));
}
