namespace ChannelPool.PollingDuplex;

/// <summary>The polling duplex protocol's fixed names and numbers (docs/polling-duplex-protocol.md).</summary>
public static class DuplexWire
{
    /// <summary>The protocol version this library speaks.</summary>
    public const int ProtocolVersion = 1;

    /// <summary>The content type of text-encoded frames.</summary>
    public const string TextContentType = "application/x-ndjson";

    /// <summary>The content type of binary frames.</summary>
    public const string BinaryContentType = "application/vnd.channelpool.duplex-frames";

    /// <summary>The content type of error bodies.</summary>
    public const string ProblemContentType = "application/problem+json";

    /// <summary>The size of a binary frame header: kind (1), sequence number (8), payload length (4).</summary>
    public const int BinaryHeaderSize = 13;

    /// <summary>
    /// The request header that carries a session's token on every request after the open. A header of its own, so the
    /// application's authentication keeps <c>Authorization</c> (a JWT bearer, say) and both travel together.
    /// </summary>
    public const string SessionTokenHeader = "Duplex-Session-Token";

    /// <summary>Returns the content type of <paramref name="encoding"/>.</summary>
    /// <param name="encoding">The encoding.</param>
    /// <returns>The content type its frames travel with.</returns>
    public static string ContentTypeOf(DuplexEncoding encoding) => encoding == DuplexEncoding.Text ? TextContentType : BinaryContentType;

    /// <summary>Returns the wire name of <paramref name="encoding"/>: <c>text</c> or <c>binary</c>.</summary>
    /// <param name="encoding">The encoding.</param>
    /// <returns>Its name on the wire.</returns>
    public static string NameOf(DuplexEncoding encoding) => encoding == DuplexEncoding.Text ? "text" : "binary";

    /// <summary>Returns the wire name of <paramref name="mode"/>: <c>single</c> or <c>multiple</c>.</summary>
    /// <param name="mode">The mode.</param>
    /// <returns>Its name on the wire.</returns>
    public static string NameOf(PollingDuplexMode mode) => mode == PollingDuplexMode.SingleMessagePerPoll ? "single" : "multiple";

    /// <summary>Returns the wire name of <paramref name="policy"/>: <c>fault</c> or <c>gap</c>.</summary>
    /// <param name="policy">The policy.</param>
    /// <returns>Its name on the wire.</returns>
    public static string NameOf(DuplexOverflowPolicy policy) => policy == DuplexOverflowPolicy.FaultSession ? "fault" : "gap";

    /// <summary>Parses an encoding's wire name.</summary>
    /// <param name="name">The name.</param>
    /// <param name="encoding">The encoding.</param>
    /// <returns><see langword="true"/> when the name is known.</returns>
    public static bool TryParseEncoding(string? name, out DuplexEncoding encoding)
    {
        encoding = name switch { "binary" => DuplexEncoding.Binary, _ => DuplexEncoding.Text };
        return name is "text" or "binary";
    }

    /// <summary>Parses a mode's wire name.</summary>
    /// <param name="name">The name.</param>
    /// <param name="mode">The mode.</param>
    /// <returns><see langword="true"/> when the name is known.</returns>
    public static bool TryParseMode(string? name, out PollingDuplexMode mode)
    {
        mode = name switch { "single" => PollingDuplexMode.SingleMessagePerPoll, _ => PollingDuplexMode.MultipleMessagesPerPoll };
        return name is "single" or "multiple";
    }

    /// <summary>The <c>code</c> values of error bodies.</summary>
    public static class Codes
    {
        /// <summary>400: the open body is not a JSON object, names an unknown encoding or mode, or has a malformed <c>openId</c>.</summary>
        public const string BadRequest = "bad-request";

        /// <summary>400: the poll's <c>ack</c> is missing, malformed, negative or beyond what was sent.</summary>
        public const string BadAck = "bad-ack";

        /// <summary>400: a sent frame cannot be read.</summary>
        public const string MalformedFrame = "malformed-frame";

        /// <summary>401: no session token (<see cref="SessionTokenHeader"/>).</summary>
        public const string MissingToken = "missing-token";

        /// <summary>403: the token does not belong to the session.</summary>
        public const string InvalidToken = "invalid-token";

        /// <summary>
        /// 403: the request's user is not the session's: another signed-in user, or none on a session a signed-in user
        /// opened (or the other way round). The session is unaffected.
        /// </summary>
        public const string WrongUser = "wrong-user";

        /// <summary>
        /// 403: the pub/sub service's topic rule does not let this user subscribe or publish to the topic. The command
        /// counts as received; the session goes on.
        /// </summary>
        public const string TopicForbidden = "topic-forbidden";

        /// <summary>404: no such session.</summary>
        public const string UnknownSession = "unknown-session";

        /// <summary>404: no such path under the endpoint.</summary>
        public const string NotFound = "not-found";

        /// <summary>405: the path exists, but not for this method; the response has <c>Allow</c>.</summary>
        public const string MethodNotAllowed = "method-not-allowed";

        /// <summary>409: a send skips a sequence number.</summary>
        public const string OutOfOrder = "out-of-order";

        /// <summary>409: a newer poll replaced this one.</summary>
        public const string PollSuperseded = "poll-superseded";

        /// <summary>410: the client closed the session.</summary>
        public const string SessionClosed = "session-closed";

        /// <summary>410: the session expired for inactivity.</summary>
        public const string SessionExpired = "session-expired";

        /// <summary>410: the server ended the session.</summary>
        public const string SessionFaulted = "session-faulted";

        /// <summary>
        /// 410: the session had not polled yet when the endpoint reached its limit of pending sessions, and a newer open
        /// took its place. A client that polls at once after opening is never evicted by opens that came after it
        /// unless that many arrive first.
        /// </summary>
        public const string SessionEvicted = "session-evicted";

        /// <summary>413: a message or request is too large.</summary>
        public const string MessageTooLarge = "message-too-large";

        /// <summary>415: the content type does not match the session's encoding.</summary>
        public const string UnsupportedMediaType = "unsupported-media-type";

        /// <summary>
        /// 415: an open whose <c>Content-Type</c> is not <c>application/json</c>. The open requires it so that a
        /// cross-site page's form, which cannot send it, can never open a session with the user's cookies.
        /// </summary>
        public const string OpenContentType = "open-content-type";

        /// <summary>422: the application rejected a message; it counts as received.</summary>
        public const string MessageRejected = "message-rejected";

        /// <summary>500: the application failed on a message; it was not received, and may be sent again.</summary>
        public const string HandlerFailed = "handler-failed";

        /// <summary>
        /// 500: the pub/sub service's topic rule failed (threw) on a command; the command was not received, and may be
        /// sent again. The server logged it.
        /// </summary>
        public const string TopicAuthorizationFailed = "topic-authorization-failed";

        /// <summary>
        /// 403: the request is signed in, but the endpoint's user id selector found no id for it (no id claim, or an empty
        /// one). Such a user is never treated as anonymous; the application's authentication must give every user an id.
        /// </summary>
        public const string UnidentifiedUser = "unidentified-user";

        /// <summary>
        /// 410: the session ended because the sign-in that made its requests expired (the endpoint's
        /// <c>CloseOnAuthenticationExpiration</c>). Sign in again and open a new session.
        /// </summary>
        public const string AuthenticationExpired = "authentication-expired";

        /// <summary>413: a send carries more messages than the endpoint takes in one request; nothing in it was delivered.</summary>
        public const string TooManyMessages = "too-many-messages";

        /// <summary>422: a subscribe past the session's subscription limit; it counts as received, and subscribed to nothing.</summary>
        public const string TooManySubscriptions = "too-many-subscriptions";

        /// <summary>429: the user (or, for anonymous clients, the remote address) holds as many sessions as the endpoint allows one.</summary>
        public const string TooManyUserSessions = "too-many-user-sessions";

        /// <summary>503: the server holds as many sessions as it allows.</summary>
        public const string TooManySessions = "too-many-sessions";

        /// <summary>503: too many sessions have opened and not yet polled.</summary>
        public const string TooManyPendingSessions = "too-many-pending-sessions";

        /// <summary>
        /// 503: the server keeps its sessions in a shared store (such as Redis) that did not answer. Nothing was
        /// half-done; repeat the request as it is.
        /// </summary>
        public const string StoreUnavailable = "store-unavailable";
    }
}
