using System.Diagnostics;
using System.Text.Json;
using ChannelPool.PollingDuplex.PubSub;
using ChannelPool.PollingDuplex.RateLimiting;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Logging;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// The requests of the protocol (docs/polling-duplex-protocol.md), on any <see cref="DuplexSessionStore"/>: each
/// handler reads the request, asks the store, and answers. What a request may do is decided here, once for every store.
/// </summary>
/// <param name="store">The endpoint's store.</param>
/// <param name="topics">A pub/sub endpoint's topic rule, run on each client message before the store sees it; null for none.</param>
/// <param name="logger">Where failures of the application and of the topic rule are logged.</param>
internal sealed class PollingDuplexEndpoints(DuplexSessionStore store, PubSubTopicAuthorizer? topics, ILogger logger)
{
    private readonly PollResponder _responder = new(store.Options, store.TimeProvider);

    private PollingDuplexOptions Options => store.Options;

    /// <summary><c>POST {base}/sessions</c>: opens a session.</summary>
    public async Task OpenAsync(HttpContext context)
    {
        if (await DuplexRequestReader.ReadOpenRequestAsync(context) is not { } request)
        {
            return;
        }

        if (await DuplexRequestReader.ReadUserAsync(context, Options) is not (true, var userId))
        {
            return;
        }

        var (encoding, mode, openId) = request;
        try
        {
            if (openId is not null && await store.FindOpenAsync(openId, userId, context.RequestAborted) is { } earlier)
            {
                // A retry of an open whose answer was lost: the same session, not an orphan.
                await WriteOpenedAsync(context, earlier.SessionId, earlier.Token, earlier.Encoding, earlier.Mode);
                return;
            }

            DuplexOpenResult opened;
            using (var activity = PollingDuplexTelemetry.ActivitySource.StartActivity("pollingduplex.session.open"))
            {
                activity?.SetTag(PollingDuplexTelemetry.EndpointTag, store.Endpoint);
                opened = await store.OpenAsync(encoding, mode, userId, context.Connection.RemoteIpAddress?.ToString(), context.RequestAborted);
                activity?.SetTag("pollingduplex.session.id", opened.SessionId);
            }

            switch (opened.Status)
            {
                case DuplexOpenStatus.Opened when openId is not null:
                    var answer = await RememberOpenAsync(context, openId, userId, new DuplexRememberedOpen(opened.SessionId!, opened.Token!, encoding, mode));
                    await WriteOpenedAsync(context, answer.SessionId, answer.Token, answer.Encoding, answer.Mode);
                    return;
                case DuplexOpenStatus.Opened:
                    await WriteOpenedAsync(context, opened.SessionId!, opened.Token!, encoding, mode);
                    return;
                case DuplexOpenStatus.Failed:
                    PollingDuplexLog.HandlerFailed(logger, store.Endpoint, opened.SessionId!, opened.Error!);
                    await DuplexProblems.WriteOpenFailedAsync(context);
                    return;
                default:
                    await DuplexProblems.WriteRefusedAsync(context, Options, opened.Status);
                    return;
            }
        }
        catch (DuplexStoreUnavailableException ex)
        {
            await DuplexProblems.WriteStoreUnavailableAsync(context, ex);
        }
    }

    /// <summary>
    /// Runs a request on a session once it carries a token, or answers <c>401</c>. Not async itself, so the poll path
    /// gets no extra state machine for it.
    /// </summary>
    public static RequestDelegate WithToken(Func<HttpContext, string, string, Task> handler) => context =>
        DuplexRequestReader.Token(context) is { } token
            ? handler(context, DuplexRequestReader.SessionId(context), token)
            : DuplexProblems.WriteMissingTokenAsync(context);

    /// <summary><c>POST {base}/sessions/{id}/messages</c>: the client's messages, handed to the store in order, once each.</summary>
    public async Task SendAsync(HttpContext context, string id, string token)
    {
        if (await DuplexRequestReader.ReadUserAsync(context, Options) is not (true, var userId))
        {
            return;
        }

        try
        {
            var lookup = await store.FindAsync(id, token, userId, context.RequestAborted);
            if (lookup.Session is not { } session)
            {
                await DuplexProblems.WriteLookupFailureAsync(context, id, lookup);
                return;
            }

            if (await EndIfSignInExpiredAsync(context, id))
            {
                return;
            }

            if (await DuplexRequestReader.ReadSendRequestAsync(context, Options, id, session.Encoding) is not { } frames)
            {
                return;
            }

            if (frames.Count > Options.MaxMessagesPerSend)
            {
                await DuplexProblems.WriteTooManyMessagesAsync(context, Options, frames.Count);
                return;
            }

            // The rate limiter took one token as the request came in; each further message costs one more.
            if (context.Features.Get<DuplexRateLimitCharge>() is { } charge && !charge.TryCharge(frames.Count - 1, out var wait))
            {
                await PollingDuplexRateLimitPolicy.WriteRejectedAsync(context, wait);
                return;
            }

            await ReceiveAsync(context, session, userId, frames);
        }
        catch (DuplexStoreUnavailableException ex)
        {
            await DuplexProblems.WriteStoreUnavailableAsync(context, ex);
        }
    }

    /// <summary><c>GET {base}/sessions/{id}/poll?ack=n</c>: the long poll.</summary>
    public async Task PollAsync(HttpContext context, string id, string token)
    {
        if (await DuplexRequestReader.ReadUserAsync(context, Options) is not (true, var userId))
        {
            return;
        }

        try
        {
            if (!DuplexRequestReader.TryReadAck(context, out var ack))
            {
                // A session that fails its lookup says so before its ack is judged.
                var found = await store.FindAsync(id, token, userId, context.RequestAborted);
                await (found.Status == DuplexLookupStatus.Found ? DuplexProblems.WriteBadAckAsync(context) : DuplexProblems.WriteLookupFailureAsync(context, id, found));
                return;
            }

            var start = await store.BeginPollAsync(id, token, userId, ack, context.RequestAborted);
            if (start.Poll is not { } poll)
            {
                await (start.AckBeyondSent ? DuplexProblems.WriteAckBeyondSentAsync(context, id, ack) : DuplexProblems.WriteLookupFailureAsync(context, id, start.Lookup));
                return;
            }

            poll.Context = context;
            var started = store.TimeProvider.GetTimestamp();
            var outcome = PollOutcome.Aborted;
            using var signInExpiry = await WatchSignInExpiryAsync(context, id);
            try
            {
                outcome = await _responder.AnswerAsync(context, poll, started);
            }
            finally
            {
                await poll.EndAsync(CancellationToken.None);
                store.Metrics.Poll(outcome, store.TimeProvider.GetElapsedTime(started));
            }
        }
        catch (DuplexStoreUnavailableException ex)
        {
            await DuplexProblems.WriteStoreUnavailableAsync(context, ex);
        }
    }

    /// <summary><c>DELETE {base}/sessions/{id}</c>: the client closes its session. Repeating it answers the same.</summary>
    public async Task CloseAsync(HttpContext context, string id, string token)
    {
        try
        {
            if (await DuplexRequestReader.ReadUserAsync(context, Options) is not (true, var userId))
            {
                return;
            }

            var lookup = await store.CloseAsync(id, token, userId, context.RequestAborted);
            if (lookup.Status == DuplexLookupStatus.Found || lookup is { Status: DuplexLookupStatus.Ended, EndReason: DuplexSessionEndReason.ClosedByClient })
            {
                context.Response.StatusCode = StatusCodes.Status204NoContent;
                return;
            }

            await DuplexProblems.WriteLookupFailureAsync(context, id, lookup);
        }
        catch (DuplexStoreUnavailableException ex)
        {
            await DuplexProblems.WriteStoreUnavailableAsync(context, ex);
        }
    }

    /// <summary>
    /// <c>POST {base}/sessions/{id}/away</c>: the client's page went away (closed, navigated, or reloading). The session
    /// ends <see cref="PollingDuplexOptions.AwayGracePeriod"/> later unless a request on it comes back first.
    /// </summary>
    public async Task AwayAsync(HttpContext context, string id, string token)
    {
        if (await DuplexRequestReader.ReadUserAsync(context, Options) is not (true, var userId))
        {
            return;
        }

        try
        {
            var lookup = await store.AwayAsync(id, token, userId, context.RequestAborted);
            if (lookup.Status == DuplexLookupStatus.Found || lookup.Status == DuplexLookupStatus.Ended)
            {
                // Repeating it, or sending it after the session ended, answers the same: the page is gone either way.
                context.Response.StatusCode = StatusCodes.Status204NoContent;
                return;
            }

            await DuplexProblems.WriteLookupFailureAsync(context, id, lookup);
        }
        catch (DuplexStoreUnavailableException ex)
        {
            await DuplexProblems.WriteStoreUnavailableAsync(context, ex);
        }
    }

    /// <summary>Any other request under the endpoint: <c>405</c> with <c>Allow</c> for a known path, else <c>404</c>; both with a problem body.</summary>
    public static Task NotFoundOrWrongMethodAsync(HttpContext context)
    {
        var path = ((string?)context.Request.RouteValues["path"] ?? string.Empty).Trim('/');
        string? allow = path.Split('/') switch
        {
            ["sessions"] => HttpMethods.Post,
            ["sessions", { Length: > 0 }] => HttpMethods.Delete,
            ["sessions", { Length: > 0 }, "messages"] => HttpMethods.Post,
            ["sessions", { Length: > 0 }, "poll"] => HttpMethods.Get,
            ["sessions", { Length: > 0 }, "away"] => HttpMethods.Post,
            _ => null,
        };
        return DuplexProblems.WriteNotFoundOrWrongMethodAsync(context, allow);
    }

    /// <summary>
    /// Hands a send's new frames to the store, one by one. Frames the session already received are skipped, so a retried
    /// request delivers nothing twice; a request that skips a sequence number is refused before anything is delivered.
    /// On a pub/sub endpoint each frame passes the topic rule first: a denied command is counted received without being
    /// run (<c>403 topic-forbidden</c>), a rule that throws leaves it unreceived (<c>500</c>), and either way the frames
    /// after it are not delivered, as after any refused message.
    /// </summary>
    private async Task ReceiveAsync(HttpContext context, DuplexStoreSession session, string? userId, List<DuplexFrame> frames)
    {
        var received = session.Received;
        var first = 0;
        while (first < frames.Count && frames[first].Sequence <= received)
        {
            first++;
        }

        for (var i = first; i < frames.Count; i++)
        {
            var expected = received + 1 + (i - first);
            if (frames[i].Sequence != expected)
            {
                await DuplexProblems.WriteOutOfOrderAsync(context, session.Id, received, expected, frames[i].Sequence);
                return;
            }
        }

        for (var i = first; i < frames.Count; i++)
        {
            var frame = frames[i];
            using var activity = PollingDuplexTelemetry.ActivitySource.StartActivity("pollingduplex.message.receive");
            activity?.SetTag(PollingDuplexTelemetry.EndpointTag, store.Endpoint);
            activity?.SetTag("pollingduplex.session.id", session.Id);
            activity?.SetTag("pollingduplex.message.sequence", frame.Sequence);
            var verdict = topics is null ? default : await topics.CheckAsync(context, userId, frame.Message!, context.RequestAborted);
            if (verdict.Decision == TopicDecision.Failed)
            {
                activity?.SetStatus(ActivityStatusCode.Error, verdict.Error!.Message);
                PollingDuplexLog.TopicRuleFailed(logger, store.Endpoint, session.Id, verdict.Access!.Operation, verdict.Access.Topic, userId ?? "(anonymous)", verdict.Error!);
                await DuplexProblems.WriteTopicRuleFailedAsync(context, frame.Sequence, verdict.Access, received);
                return;
            }

            var result = verdict.Decision == TopicDecision.Forbidden
                ? await store.RefuseAsync(session, frame.Sequence, DuplexWire.Codes.TopicForbidden, context.RequestAborted)
                : await store.ReceiveAsync(session, frame.Sequence, frame.Message!, context.RequestAborted);
            switch (result.Status)
            {
                case DuplexReceiveStatus.Accepted:
                    received = result.Received;
                    store.Metrics.Received();
                    break;
                case DuplexReceiveStatus.AlreadyReceived:
                    // Another request of this session (on another node, perhaps) received it first: once is enough.
                    received = result.Received;
                    break;
                case DuplexReceiveStatus.Rejected when verdict.Decision == TopicDecision.Forbidden:
                    activity?.SetStatus(ActivityStatusCode.Error, DuplexWire.Codes.TopicForbidden);
                    await DuplexProblems.WriteTopicForbiddenAsync(context, frame.Sequence, verdict.Access!, result.Received);
                    return;
                case DuplexReceiveStatus.Rejected when result.RejectionCode is { } code:
                    activity?.SetStatus(ActivityStatusCode.Error, code);
                    await DuplexProblems.WriteLimitRejectedAsync(context, frame.Sequence, code, result.Rejection!, result.Received);
                    return;
                case DuplexReceiveStatus.Rejected:
                    activity?.SetStatus(ActivityStatusCode.Error, result.Rejection);
                    await DuplexProblems.WriteRejectedAsync(context, frame.Sequence, result.Rejection!, result.Received);
                    return;
                case DuplexReceiveStatus.Failed:
                    activity?.SetStatus(ActivityStatusCode.Error, result.Error?.Message);
                    PollingDuplexLog.HandlerFailed(logger, store.Endpoint, session.Id, result.Error!);
                    await DuplexProblems.WriteReceiveFailedAsync(context, frame.Sequence, result.Received);
                    return;
                case DuplexReceiveStatus.OutOfOrder:
                    await DuplexProblems.WriteOutOfOrderAsync(context, session.Id, result.Received, result.Received + 1, frame.Sequence);
                    return;
                default:
                    await DuplexProblems.WriteLookupFailureAsync(context, session.Id, result.Lookup);
                    return;
            }
        }

        await WriteReceivedAsync(context, received);
    }

    /// <summary>
    /// Remembers a new session as the answer to its <c>openId</c>; when a concurrent open with the same id was remembered
    /// first, this one's session is closed and that one's answer stands.
    /// </summary>
    private async Task<DuplexRememberedOpen> RememberOpenAsync(HttpContext context, string openId, string? userId, DuplexRememberedOpen opened)
    {
        var answer = await store.RememberOpenAsync(openId, userId, opened, context.RequestAborted);
        if (!string.Equals(answer.SessionId, opened.SessionId, StringComparison.Ordinal))
        {
            await store.CloseSessionAsync(opened.SessionId, CancellationToken.None);
        }

        return answer;
    }

    /// <summary>Answers a successful open: <c>201</c> with the session's id, token and the endpoint's settings.</summary>
    private async Task WriteOpenedAsync(HttpContext context, string sessionId, string token, DuplexEncoding encoding, PollingDuplexMode mode)
    {
        var request = context.Request;
        var response = context.Response;
        response.StatusCode = StatusCodes.Status201Created;
        response.ContentType = "application/json";
        response.Headers.CacheControl = "no-store";
        response.Headers.Location = $"{request.PathBase}{request.Path.Value?.TrimEnd('/')}/{sessionId}";
        await using var json = new Utf8JsonWriter(response.BodyWriter);
        json.WriteStartObject();
        json.WriteNumber("protocolVersion", DuplexWire.ProtocolVersion);
        json.WriteString("sessionId", sessionId);
        json.WriteString("token", token);
        json.WriteString("encoding", DuplexWire.NameOf(encoding));
        json.WriteString("mode", DuplexWire.NameOf(mode));
        json.WriteNumber("serverPollTimeoutMs", (long)Options.ServerPollTimeout.TotalMilliseconds);
        json.WriteNumber("inactivityTimeoutMs", (long)Options.InactivityTimeout.TotalMilliseconds);
        json.WriteNumber("firstPollTimeoutMs", (long)store.FirstPollTimeout.TotalMilliseconds);
        json.WriteNumber("maxMessageSize", Options.MaxMessageSize);
        json.WriteNumber("maxSendRequestSize", Options.MaxSendRequestSize);
        json.WriteNumber("maxPendingMessages", Options.MaxPendingMessagesPerSession);
        json.WriteNumber("maxPendingBytes", Options.MaxPendingBytesPerSession);
        json.WriteNumber("maxMessagesPerSend", Options.MaxMessagesPerSend);
        json.WriteNumber("batchWindowMs", (long)Options.BatchWindow.TotalMilliseconds);
        json.WriteString("overflowPolicy", DuplexWire.NameOf(Options.OverflowPolicy));
        json.WriteEndObject();
    }

    /// <summary>
    /// With <see cref="PollingDuplexOptions.CloseOnAuthenticationExpiration"/>, ends the session (found and checked by the
    /// caller) when the request's sign-in has expired, and answers <c>410 authentication-expired</c>; returns whether it did.
    /// </summary>
    private async ValueTask<bool> EndIfSignInExpiredAsync(HttpContext context, string id)
    {
        if (!Options.CloseOnAuthenticationExpiration || DuplexRequestReader.SignInExpiry(context) is not { } expiry || expiry > store.TimeProvider.GetUtcNow())
        {
            return false;
        }

        await store.EndSessionAsync(id, DuplexSessionEndReason.AuthenticationExpired, context.RequestAborted);
        await DuplexProblems.WriteLookupFailureAsync(context, id, DuplexSessionLookup.Ended(DuplexSessionEndReason.AuthenticationExpired));
        return true;
    }

    /// <summary>
    /// With <see cref="PollingDuplexOptions.CloseOnAuthenticationExpiration"/>, ends the polled session when the poll's
    /// sign-in expires while it is held: the poll then answers <c>410 authentication-expired</c> instead of delivering.
    /// A sign-in already expired ends it before the poll takes anything.
    /// </summary>
    private async ValueTask<ITimer?> WatchSignInExpiryAsync(HttpContext context, string id)
    {
        if (!Options.CloseOnAuthenticationExpiration || DuplexRequestReader.SignInExpiry(context) is not { } expiry)
        {
            return null;
        }

        var left = expiry - store.TimeProvider.GetUtcNow();
        if (left <= TimeSpan.Zero)
        {
            await store.EndSessionAsync(id, DuplexSessionEndReason.AuthenticationExpired, context.RequestAborted);
            return null;
        }

        if (left > Options.ServerPollTimeout + Options.BatchWindow)
        {
            return null;
        }

        return store.TimeProvider.CreateTimer(static state => ((Action)state!)(), (Action)(() => _ = EndQuietlyAsync(id)), left, Timeout.InfiniteTimeSpan);
    }

    private async Task EndQuietlyAsync(string id)
    {
        try
        {
            await store.EndSessionAsync(id, DuplexSessionEndReason.AuthenticationExpired, CancellationToken.None);
        }
        catch (DuplexStoreUnavailableException)
        {
            // The client's next request, with its expired sign-in, is refused by the application's authentication.
        }
    }

    /// <summary>Answers a send whose messages were all received: <c>200 {"received":n}</c>.</summary>
    private static async Task WriteReceivedAsync(HttpContext context, long received)
    {
        context.Response.StatusCode = StatusCodes.Status200OK;
        context.Response.ContentType = "application/json";
        await using var body = new Utf8JsonWriter(context.Response.BodyWriter);
        body.WriteStartObject();
        body.WriteNumber("received", received);
        body.WriteEndObject();
    }
}
