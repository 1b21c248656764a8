using ChannelPool.PollingDuplex.PubSub;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.AspNetCore.Http;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// Every error answer of the protocol: a status and a problem body with a <c>code</c> from <see cref="DuplexWire.Codes"/>
/// (docs/polling-duplex-protocol.md, "Errors"). One place, so every store answers the same request the same way.
/// </summary>
internal static class DuplexProblems
{
    /// <summary>Answers a request without the session's token.</summary>
    public static Task WriteMissingTokenAsync(HttpContext context) =>
        WriteProblemAsync(context, 401, DuplexWire.Codes.MissingToken, "Missing token", $"Send the session's token in the {DuplexWire.SessionTokenHeader} header; Authorization is left to the application's own authentication.");

    /// <summary>Answers a request whose session the store could not reach.</summary>
    public static Task WriteLookupFailureAsync(HttpContext context, string id, DuplexSessionLookup lookup) => lookup.Status switch
    {
        DuplexLookupStatus.InvalidToken => WriteProblemAsync(context, 403, DuplexWire.Codes.InvalidToken, "Invalid token", $"The token does not belong to session {id}."),
        DuplexLookupStatus.WrongUser => WriteProblemAsync(context, 403, DuplexWire.Codes.WrongUser, "Wrong user", $"Session {id} belongs to the user who opened it, and this request is not theirs (or one of the two is anonymous). Send its requests with that user's credentials; the session is unaffected."),
        DuplexLookupStatus.Ended => WriteEndedAsync(context, id, lookup.EndReason ?? DuplexSessionEndReason.ClosedByServer),
        _ => WriteProblemAsync(context, 404, DuplexWire.Codes.UnknownSession, "Unknown session", $"There is no session {id}. Open a new one."),
    };

    /// <summary>Answers an open that is not <c>application/json</c>.</summary>
    public static Task WriteOpenContentTypeAsync(HttpContext context) =>
        WriteProblemAsync(context, 415, DuplexWire.Codes.OpenContentType, "Open must be JSON", $"Open a session with Content-Type: application/json and a JSON object body ({{}} will do), not '{context.Request.ContentType}'. A cross-site form cannot send that type, so no other page can open a session with this user's cookies.");

    /// <summary>Answers an open whose body is over <paramref name="limit"/> bytes.</summary>
    public static Task WriteOpenBodyTooLargeAsync(HttpContext context, int limit) =>
        WriteProblemAsync(context, 413, DuplexWire.Codes.MessageTooLarge, "Open body too large", $"The open body may be at most {limit} bytes.");

    /// <summary>Answers an open whose body is not what the protocol asks for; <paramref name="detail"/> says what is wrong.</summary>
    public static Task WriteBadOpenRequestAsync(HttpContext context, string detail) =>
        WriteProblemAsync(context, 400, DuplexWire.Codes.BadRequest, "Bad open request", detail);

    /// <summary>Answers a signed-in request that has no user id (<c>403 unidentified-user</c>); <paramref name="detail"/> says why.</summary>
    public static Task WriteUnidentifiedUserAsync(HttpContext context, string detail) =>
        WriteProblemAsync(context, 403, DuplexWire.Codes.UnidentifiedUser, "Unidentified user", detail);

    /// <summary>Answers a send that carries more messages than the endpoint takes in one request; nothing in it was delivered.</summary>
    public static Task WriteTooManyMessagesAsync(HttpContext context, PollingDuplexOptions options, int count) =>
        WriteProblemAsync(context, 413, DuplexWire.Codes.TooManyMessages, "Too many messages", $"A send may carry at most {options.MaxMessagesPerSend} messages (maxMessagesPerSend in the open response); this one carries {count}. Nothing in the request was delivered: send them in smaller batches.");

    /// <summary>Answers a message the store refused for one of the endpoint's limits; it counts as received, and later messages of the request were not delivered.</summary>
    public static Task WriteLimitRejectedAsync(HttpContext context, long sequence, string code, string reason, long received) =>
        WriteProblemAsync(context, 422, code, "Limit reached", $"Message {sequence}: {reason} It counts as received; messages after it in this request were not delivered.", ("received", received));

    /// <summary>Answers an open that a session limit refuses (<c>503</c>, or <c>429</c> for the user's own limit; with <c>Retry-After</c>).</summary>
    public static Task WriteRefusedAsync(HttpContext context, PollingDuplexOptions options, DuplexOpenStatus refusal)
    {
        if (refusal == DuplexOpenStatus.TooManyUserSessions)
        {
            context.Response.Headers.RetryAfter = "5";
            return WriteProblemAsync(context, 429, DuplexWire.Codes.TooManyUserSessions, "Too many sessions for this user", $"This user (or, for anonymous clients, this address) holds its limit of sessions on the endpoint ({options.MaxSessionsPerUser} per signed-in user, {options.MaxSessionsPerAddress} per address). Close a session you no longer use (DELETE), or wait for an abandoned one to expire.");
        }

        var pending = refusal == DuplexOpenStatus.TooManyPendingSessions;
        context.Response.Headers.RetryAfter = pending ? "1" : "5";
        return pending
            ? WriteProblemAsync(context, 503, DuplexWire.Codes.TooManyPendingSessions, "Too many pending sessions", $"{options.MaxPendingSessions} sessions have opened without polling yet; try again shortly.")
            : WriteProblemAsync(context, 503, DuplexWire.Codes.TooManySessions, "Too many sessions", $"The endpoint holds its limit of {options.MaxConcurrentSessions} sessions, or is shutting down.");
    }

    /// <summary>Answers an open the application failed on.</summary>
    public static Task WriteOpenFailedAsync(HttpContext context) =>
        WriteProblemAsync(context, 500, DuplexWire.Codes.HandlerFailed, "The application failed", "The application could not open the session.");

    /// <summary>Answers a malformed <c>ack</c>.</summary>
    public static Task WriteBadAckAsync(HttpContext context) =>
        WriteProblemAsync(context, 400, DuplexWire.Codes.BadAck, "Bad acknowledgement", $"'ack' must be the highest sequence number received, a whole number from 0; it was '{context.Request.Query["ack"]}'.");

    /// <summary>Answers an ack beyond what was sent.</summary>
    public static Task WriteAckBeyondSentAsync(HttpContext context, string sessionId, long ack) =>
        WriteProblemAsync(context, 400, DuplexWire.Codes.BadAck, "Bad acknowledgement", $"ack {ack} is beyond the highest sequence number sent on session {sessionId}.");

    /// <summary>Answers a superseded poll.</summary>
    public static Task WriteSupersededAsync(HttpContext context, string sessionId) =>
        WriteProblemAsync(context, 409, DuplexWire.Codes.PollSuperseded, "Poll superseded", $"A newer poll on session {sessionId} replaced this one.");

    /// <summary>Answers a send whose content type is not its session's encoding.</summary>
    public static Task WriteWrongContentTypeAsync(HttpContext context, string sessionId, DuplexEncoding encoding) =>
        WriteProblemAsync(context, 415, DuplexWire.Codes.UnsupportedMediaType, "Wrong content type", $"Session {sessionId} is {DuplexWire.NameOf(encoding)}-encoded: send {DuplexWire.ContentTypeOf(encoding)}, not '{context.Request.ContentType}'.");

    /// <summary>Answers a send whose declared length is over the limit.</summary>
    public static Task WriteRequestTooLargeAsync(HttpContext context, PollingDuplexOptions options) =>
        WriteProblemAsync(context, 413, DuplexWire.Codes.MessageTooLarge, "Request too large", $"A send may be at most {options.MaxSendRequestSize} bytes; this one is {context.Request.ContentLength}.");

    /// <summary>Answers a send with a frame that cannot be read, or is too large; nothing in it was delivered.</summary>
    public static Task WriteBadFrameAsync(HttpContext context, DuplexFrameReadStatus status, int frame, string? error) => status == DuplexFrameReadStatus.TooLarge
        ? WriteProblemAsync(context, 413, DuplexWire.Codes.MessageTooLarge, "Message too large", $"Frame {frame}: {error}. Nothing in the request was delivered.")
        : WriteProblemAsync(context, 400, DuplexWire.Codes.MalformedFrame, "Malformed frame", $"Frame {frame} of the request cannot be read: {error}. Nothing in the request was delivered.");

    /// <summary>Answers a send whose first new message is not the next one expected.</summary>
    public static Task WriteOutOfOrderAsync(HttpContext context, string sessionId, long received, long expected, long got) =>
        WriteProblemAsync(
            context,
            409,
            DuplexWire.Codes.OutOfOrder,
            "Out of order",
            $"Session {sessionId} has received up to {received}: the next message must be {expected}, not {got}. Nothing in the request was delivered.",
            ("received", received));

    /// <summary>Answers a message the application refused; it counts as received.</summary>
    public static Task WriteRejectedAsync(HttpContext context, long sequence, string reason, long received) =>
        WriteProblemAsync(context, 422, DuplexWire.Codes.MessageRejected, "Message rejected", $"Message {sequence}: {reason}", ("received", received));

    /// <summary>Answers a command the topic rule denied; it counts as received, and later messages of the request were not delivered.</summary>
    public static Task WriteTopicForbiddenAsync(HttpContext context, long sequence, PubSubTopicAccess access, long received) =>
        WriteProblemAsync(
            context,
            403,
            DuplexWire.Codes.TopicForbidden,
            "Topic forbidden",
            $"Message {sequence}: {Describe(access)} is not allowed. It counts as received; messages after it in this request were not delivered.",
            ("received", received));

    /// <summary>Answers a command the topic rule failed on; it was not received.</summary>
    public static Task WriteTopicRuleFailedAsync(HttpContext context, long sequence, PubSubTopicAccess access, long received) =>
        WriteProblemAsync(
            context,
            500,
            DuplexWire.Codes.TopicAuthorizationFailed,
            "Topic rule failed",
            $"Message {sequence}: the server could not decide whether {Describe(access)} is allowed. It was not received and may be sent again.",
            ("received", received));

    /// <summary>Answers a message the application failed on; it was not received.</summary>
    public static Task WriteReceiveFailedAsync(HttpContext context, long sequence, long received) =>
        WriteProblemAsync(context, 500, DuplexWire.Codes.HandlerFailed, "The application failed", $"Message {sequence} was not received; it may be sent again.", ("received", received));

    /// <summary>Answers a request the store could not serve; mid-response the connection is cut instead, and the client polls again with the same ack.</summary>
    public static Task WriteStoreUnavailableAsync(HttpContext context, DuplexStoreUnavailableException error)
    {
        if (!context.Response.HasStarted)
        {
            context.Response.Headers.RetryAfter = "1";
        }

        return WriteProblemAsync(context, 503, DuplexWire.Codes.StoreUnavailable, "Session store unavailable", error.Message);
    }

    /// <summary>Answers a path under the endpoint that exists for another method (<c>405</c>, with <c>Allow</c>), or not at all (<c>404</c>).</summary>
    public static Task WriteNotFoundOrWrongMethodAsync(HttpContext context, string? allow)
    {
        if (allow is null)
        {
            return WriteProblemAsync(context, 404, DuplexWire.Codes.NotFound, "Not found", $"There is nothing at '{context.Request.Path}'. The endpoint serves POST sessions, POST sessions/{{id}}/messages, GET sessions/{{id}}/poll, POST sessions/{{id}}/away and DELETE sessions/{{id}}.");
        }

        context.Response.Headers.Allow = allow;
        return WriteProblemAsync(context, 405, DuplexWire.Codes.MethodNotAllowed, "Method not allowed", $"'{context.Request.Path}' takes {allow}, not {context.Request.Method}.");
    }

    private static Task WriteEndedAsync(HttpContext context, string id, DuplexSessionEndReason reason) => reason switch
    {
        DuplexSessionEndReason.ClosedByClient => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionClosed, "Session closed", $"Session {id} was closed by its client."),
        DuplexSessionEndReason.Expired => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionExpired, "Session expired", $"Session {id} had no request within the inactivity timeout and was ended."),
        DuplexSessionEndReason.Overflow => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionFaulted, "Session faulted", $"Session {id} faulted: overflow. Its pending buffer was full; the client did not keep up."),
        DuplexSessionEndReason.ServerShutdown => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionFaulted, "Session faulted", $"Session {id} ended: the server is shutting down."),
        DuplexSessionEndReason.AuthenticationExpired => WriteProblemAsync(context, 410, DuplexWire.Codes.AuthenticationExpired, "Sign-in expired", $"Session {id} ended when the sign-in of its requests expired. Sign in again and open a new session."),
        DuplexSessionEndReason.Displaced => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionEvicted, "Session evicted", $"Session {id} was the longest-idle session of the user (or address) holding the most sessions when the endpoint was full, and gave way to another user's open. Open a new session if it is still wanted."),
        DuplexSessionEndReason.Evicted => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionEvicted, "Session evicted", $"Session {id} had not polled when the endpoint reached its limit of sessions waiting for a first poll, and a newer one took its place. Open a new session and poll at once."),
        _ => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionFaulted, "Session faulted", $"Session {id} was closed by the server."),
    };

    private static string Describe(PubSubTopicAccess access) =>
        $"{(access.Operation == PubSubOperation.Subscribe ? "subscribing to" : "publishing to")} topic \"{access.Topic}\"";

    private static async Task WriteProblemAsync(HttpContext context, int status, string code, string title, string detail, (string Name, object Value)? extra = null)
    {
        var response = context.Response;
        if (response.HasStarted)
        {
            // Mid-stream there is no status left to send; ending the connection is the only honest signal.
            context.Abort();
            return;
        }

        response.Headers.CacheControl = "no-store";
        if (status == StatusCodes.Status401Unauthorized)
        {
            // A 401 names its challenge; ours is the session token, so the application's own (Bearer, cookies) stays its own.
            response.Headers.WWWAuthenticate = DuplexWire.SessionTokenHeader;
        }

        var extensions = new Dictionary<string, object?> { ["code"] = code };
        if (extra is { } member)
        {
            extensions[member.Name] = member.Value;
        }

        // Through Results.Problem, which writes with the host's IProblemDetailsService when it has one, so the host's
        // customisation (trace ids, extra members) applies to these bodies as to its own.
        await Results.Problem(detail, statusCode: status, title: title, type: $"urn:channelpool:polling-duplex:{code}", extensions: extensions).ExecuteAsync(context);
    }
}
