using System.Buffers;
using System.Globalization;
using System.IO.Pipelines;
using System.Net.Http.Headers;
using System.Text.Json;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.Logging;

namespace ChannelPool.PollingDuplex;

/// <summary>The four requests of the protocol (docs/polling-duplex-protocol.md), and the error for every bad one.</summary>
internal sealed partial class PollingDuplexEndpoints(PollingDuplexServer server, ILogger logger)
{
    private const int MaxOpenBodySize = 4096;

    /// <summary>How many bytes a streaming response buffers before it flushes while frames keep coming.</summary>
    private const int FlushThreshold = 64 * 1024;

    private PollingDuplexOptions Options => server.Options;

    /// <summary><c>POST {base}/sessions</c>: opens a session.</summary>
    public async Task OpenAsync(HttpContext context)
    {
        if (await ReadOpenRequestAsync(context) is not var (encoding, mode))
        {
            return;
        }

        if (server.TryReserve() is { } refusal)
        {
            await WriteRefusedAsync(context, Options, refusal);
            return;
        }

        DuplexSession session;
        string token;
        try
        {
            (session, token) = server.Create(encoding, mode);
        }
        catch
        {
            server.Unreserve();
            throw;
        }

        using (var activity = PollingDuplexTelemetry.ActivitySource.StartActivity("pollingduplex.session.open"))
        {
            activity?.SetTag(PollingDuplexTelemetry.EndpointTag, server.Endpoint);
            activity?.SetTag("pollingduplex.session.id", session.Id);
            try
            {
                await server.Handler.OnSessionOpenedAsync(session, context.RequestAborted);
            }
            catch (Exception ex) when (ex is not OperationCanceledException)
            {
                PollingDuplexServer.LogHandlerFailed(logger, server.Endpoint, session.Id, ex);
                server.End(session, DuplexSessionEndReason.ClosedByServer);
                await WriteProblemAsync(context, 500, DuplexWire.Codes.HandlerFailed, "The application failed", "The application could not open the session.");
                return;
            }
        }

        await WriteOpenedAsync(context, Options, session.Id, token, encoding, mode);
    }

    /// <summary>Answers an open that a session limit refuses (<c>503</c>, with <c>Retry-After</c>).</summary>
    internal static Task WriteRefusedAsync(HttpContext context, PollingDuplexOptions options, string refusal)
    {
        var pending = refusal == DuplexWire.Codes.TooManyPendingSessions;
        context.Response.Headers.RetryAfter = pending ? "1" : "5";
        return WriteProblemAsync(
            context,
            503,
            refusal,
            pending ? "Too many pending sessions" : "Too many sessions",
            pending
                ? $"{options.MaxPendingSessions} sessions have opened without polling yet; try again shortly."
                : $"The endpoint holds its limit of {options.MaxConcurrentSessions} sessions, or is shutting down.");
    }

    /// <summary>Answers a successful open: <c>201</c> with the session's id, token and the endpoint's settings.</summary>
    internal static async Task WriteOpenedAsync(HttpContext context, PollingDuplexOptions options, string sessionId, string token, DuplexEncoding encoding, PollingDuplexMode mode)
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
        json.WriteNumber("serverPollTimeoutMs", (long)options.ServerPollTimeout.TotalMilliseconds);
        json.WriteNumber("inactivityTimeoutMs", (long)options.InactivityTimeout.TotalMilliseconds);
        json.WriteNumber("firstPollTimeoutMs", (long)options.EffectiveFirstPollTimeout.TotalMilliseconds);
        json.WriteNumber("maxMessageSize", options.MaxMessageSize);
        json.WriteNumber("maxSendRequestSize", options.MaxSendRequestSize);
        json.WriteNumber("maxPendingMessages", options.MaxPendingMessagesPerSession);
        json.WriteNumber("maxPendingBytes", options.MaxPendingBytesPerSession);
        json.WriteNumber("batchWindowMs", (long)options.BatchWindow.TotalMilliseconds);
        json.WriteString("overflowPolicy", DuplexWire.NameOf(options.OverflowPolicy));
        json.WriteEndObject();
    }

    /// <summary>Reads and checks the open body, or answers what is wrong with it and returns null. Every store shares it.</summary>
    internal static async Task<(DuplexEncoding Encoding, PollingDuplexMode Mode)?> ReadOpenRequestAsync(HttpContext context)
    {
        var encoding = DuplexEncoding.Text;
        var mode = PollingDuplexMode.MultipleMessagesPerPoll;
        var body = await ReadOpenBodyAsync(context);
        if (body is null)
        {
            await WriteProblemAsync(context, 413, DuplexWire.Codes.MessageTooLarge, "Open body too large", $"The open body may be at most {MaxOpenBodySize} bytes.");
            return null;
        }

        if (!System.Text.Unicode.Utf8.IsValid(body))
        {
            await WriteProblemAsync(context, 400, DuplexWire.Codes.BadRequest, "Bad open request", "The open body is not valid UTF-8.");
            return null;
        }

        if (body.Length > 0)
        {
            try
            {
                using var document = JsonDocument.Parse(body);
                if (document.RootElement.ValueKind != JsonValueKind.Object)
                {
                    throw new JsonException("The body must be a JSON object.");
                }

                if (document.RootElement.TryGetProperty("encoding", out var e) && !DuplexWire.TryParseEncoding(e.ValueKind == JsonValueKind.String ? e.GetString() : null, out encoding))
                {
                    await WriteProblemAsync(context, 400, DuplexWire.Codes.BadRequest, "Bad open request", $"Unknown encoding {e.GetRawText()}; use \"text\" or \"binary\".");
                    return null;
                }

                if (document.RootElement.TryGetProperty("mode", out var m) && !DuplexWire.TryParseMode(m.ValueKind == JsonValueKind.String ? m.GetString() : null, out mode))
                {
                    await WriteProblemAsync(context, 400, DuplexWire.Codes.BadRequest, "Bad open request", $"Unknown mode {m.GetRawText()}; use \"single\" or \"multiple\".");
                    return null;
                }
            }
            catch (JsonException ex)
            {
                await WriteProblemAsync(context, 400, DuplexWire.Codes.BadRequest, "Bad open request", $"The open body is not a JSON object: {ex.Message}");
                return null;
            }
        }

        return (encoding, mode);
    }

    /// <summary>Reads the whole open body, whatever its framing (length or chunked), or returns null past the size limit.</summary>
    private static async Task<byte[]?> ReadOpenBodyAsync(HttpContext context)
    {
        if (context.Request.ContentLength is > MaxOpenBodySize)
        {
            return null;
        }

        var reader = context.Request.BodyReader;
        while (true)
        {
            var result = await reader.ReadAsync(context.RequestAborted);
            var buffer = result.Buffer;
            if (buffer.Length > MaxOpenBodySize)
            {
                reader.AdvanceTo(buffer.Start);
                return null;
            }

            if (result.IsCompleted)
            {
                var bytes = buffer.ToArray();
                reader.AdvanceTo(buffer.End);
                return bytes;
            }

            reader.AdvanceTo(buffer.Start, buffer.End);
        }
    }

    /// <summary><c>POST {base}/sessions/{id}/messages</c>: the client's messages, handed to the application in order, once each.</summary>
    public async Task SendAsync(HttpContext context)
    {
        if (await FindAsync(context) is not { } session)
        {
            return;
        }

        if (await ReadSendRequestAsync(context, Options, session.Id, session.Encoding) is not { } frames)
        {
            return;
        }

        await session.SendGate.WaitAsync(context.RequestAborted);
        try
        {
            if (session.EndReason is { } ended)
            {
                await WriteEndedAsync(context, session.Id, ended);
                return;
            }

            await DeliverAsync(context, session, frames);
        }
        finally
        {
            session.SendGate.Release();
            session.Touch();
        }
    }

    /// <summary>
    /// Checks a send's content type and size and reads its frames, or answers what is wrong and returns null. Nothing is
    /// delivered from a request with a bad frame. Every store shares it.
    /// </summary>
    internal static async Task<List<DuplexFrame>?> ReadSendRequestAsync(HttpContext context, PollingDuplexOptions options, string sessionId, DuplexEncoding encoding)
    {
        var request = context.Request;
        var expected = DuplexWire.ContentTypeOf(encoding);
        if (!MediaTypeHeaderValue.TryParse(request.ContentType, out var contentType) || !string.Equals(contentType.MediaType, expected, StringComparison.OrdinalIgnoreCase))
        {
            await WriteProblemAsync(context, 415, DuplexWire.Codes.UnsupportedMediaType, "Wrong content type", $"Session {sessionId} is {DuplexWire.NameOf(encoding)}-encoded: send {expected}, not '{request.ContentType}'.");
            return null;
        }

        if (request.ContentLength > options.MaxSendRequestSize)
        {
            await WriteProblemAsync(context, 413, DuplexWire.Codes.MessageTooLarge, "Request too large", $"A send may be at most {options.MaxSendRequestSize} bytes; this one is {request.ContentLength}.");
            return null;
        }

        if (context.Features.Get<IHttpMaxRequestBodySizeFeature>() is { IsReadOnly: false } limit)
        {
            limit.MaxRequestBodySize = options.MaxSendRequestSize;
        }

        var frames = new List<DuplexFrame>();
        var (status, error) = await ReadFramesAsync(context, options, encoding, frames);
        switch (status)
        {
            case FrameReadStatus.Malformed:
                await WriteProblemAsync(context, 400, DuplexWire.Codes.MalformedFrame, "Malformed frame", $"Frame {frames.Count + 1} of the request cannot be read: {error}. Nothing in the request was delivered.");
                return null;
            case FrameReadStatus.TooLarge:
                await WriteProblemAsync(context, 413, DuplexWire.Codes.MessageTooLarge, "Message too large", $"Frame {frames.Count + 1}: {error}. Nothing in the request was delivered.");
                return null;
        }

        return frames;
    }

    /// <summary>As <see cref="ReadSendRequestAsync"/>, for a store outside this assembly: each message with its sequence number.</summary>
    internal static async Task<List<(long Sequence, DuplexMessage Message)>?> ReadSendMessagesAsync(HttpContext context, PollingDuplexOptions options, string sessionId, DuplexEncoding encoding) =>
        await ReadSendRequestAsync(context, options, sessionId, encoding) is { } frames ? frames.ConvertAll(f => (f.Sequence, f.Message!)) : null;

    /// <summary><c>GET {base}/sessions/{id}/poll?ack=n</c>: the long poll.</summary>
    public async Task PollAsync(HttpContext context)
    {
        if (await FindAsync(context) is not { } session)
        {
            return;
        }

        if (await ReadAckAsync(context) is not { } ack)
        {
            return;
        }

        var ticket = session.BeginPoll(context, ack, out var badAck, out var ended, out var firstPoll);
        if (ticket is null)
        {
            if (ended is { } reason)
            {
                await WriteEndedAsync(context, session.Id, reason);
            }
            else
            {
                await WriteAckBeyondSentAsync(context, session.Id, ack);
            }

            return;
        }

        if (firstPoll)
        {
            server.FirstPoll();
        }

        var started = server.TimeProvider.GetTimestamp();
        var outcome = "aborted";
        try
        {
            outcome = await AnswerPollAsync(context, session, ticket, started);
        }
        finally
        {
            session.EndPoll(ticket);
            server.Metrics.Poll(outcome, server.TimeProvider.GetElapsedTime(started));
        }
    }

    /// <summary>Reads a poll's <c>ack</c>, or answers that it is bad and returns null. Every store shares it.</summary>
    internal static async Task<long?> ReadAckAsync(HttpContext context)
    {
        if (!TryReadAck(context, out var ack))
        {
            await WriteBadAckAsync(context);
            return null;
        }

        return ack;
    }

    /// <summary>Reads a poll's <c>ack</c> without answering.</summary>
    internal static bool TryReadAck(HttpContext context, out long ack) =>
        long.TryParse(context.Request.Query["ack"].ToString(), NumberStyles.None, CultureInfo.InvariantCulture, out ack);

    /// <summary>Answers a malformed <c>ack</c>.</summary>
    internal static Task WriteBadAckAsync(HttpContext context) =>
        WriteProblemAsync(context, 400, DuplexWire.Codes.BadAck, "Bad acknowledgement", $"'ack' must be the highest sequence number received, a whole number from 0; it was '{context.Request.Query["ack"]}'.");

    /// <summary>Answers an ack beyond what was sent.</summary>
    internal static Task WriteAckBeyondSentAsync(HttpContext context, string sessionId, long ack) =>
        WriteProblemAsync(context, 400, DuplexWire.Codes.BadAck, "Bad acknowledgement", $"ack {ack} is beyond the highest sequence number sent on session {sessionId}.");

    /// <summary>Answers a send whose first new message is not the next one expected.</summary>
    internal static Task WriteOutOfOrderAsync(HttpContext context, string sessionId, long received, long expected, long got) =>
        WriteProblemAsync(
            context,
            409,
            DuplexWire.Codes.OutOfOrder,
            "Out of order",
            $"Session {sessionId} has received up to {received}: the next message must be {expected}, not {got}. Nothing in the request was delivered.",
            ("received", received));

    /// <summary>Answers a superseded poll.</summary>
    internal static Task WriteSupersededAsync(HttpContext context, string sessionId) =>
        WriteProblemAsync(context, 409, DuplexWire.Codes.PollSuperseded, "Poll superseded", $"A newer poll on session {sessionId} replaced this one.");

    /// <summary>Answers a message the application refused; it counts as received.</summary>
    internal static Task WriteRejectedAsync(HttpContext context, long sequence, string reason, long received) =>
        WriteProblemAsync(context, 422, DuplexWire.Codes.MessageRejected, "Message rejected", $"Message {sequence}: {reason}", ("received", received));

    /// <summary>Answers a send whose messages were all received: <c>200 {"received":n}</c>.</summary>
    internal static async Task WriteReceivedAsync(HttpContext context, long received)
    {
        context.Response.StatusCode = StatusCodes.Status200OK;
        context.Response.ContentType = "application/json";
        await using var body = new Utf8JsonWriter(context.Response.BodyWriter);
        body.WriteStartObject();
        body.WriteNumber("received", received);
        body.WriteEndObject();
    }

    /// <summary><c>DELETE {base}/sessions/{id}</c>: the client closes its session. Repeating it answers the same.</summary>
    public async Task CloseAsync(HttpContext context)
    {
        var id = (string)context.Request.RouteValues["id"]!;
        var lookup = server.Find(id, BearerToken(context), out var session, out var endedBecause);
        switch (lookup)
        {
            case SessionLookup.Found:
                server.End(session!, DuplexSessionEndReason.ClosedByClient);
                context.Response.StatusCode = StatusCodes.Status204NoContent;
                return;
            case SessionLookup.Ended when endedBecause == DuplexSessionEndReason.ClosedByClient:
                context.Response.StatusCode = StatusCodes.Status204NoContent;
                return;
            default:
                await WriteLookupFailureAsync(context, id, lookup, endedBecause);
                return;
        }
    }

    /// <summary>Any other request under the endpoint: <c>405</c> with <c>Allow</c> for a known path, else <c>404</c>; both with a problem body.</summary>
    public static Task NotFoundOrWrongMethodAsync(HttpContext context)
    {
        var path = ((string?)context.Request.RouteValues["path"] ?? string.Empty).Trim('/');
        var segments = path.Split('/');
        string? allow = segments switch
        {
            ["sessions"] => HttpMethods.Post,
            ["sessions", { Length: > 0 }] => HttpMethods.Delete,
            ["sessions", { Length: > 0 }, "messages"] => HttpMethods.Post,
            ["sessions", { Length: > 0 }, "poll"] => HttpMethods.Get,
            _ => null,
        };
        if (allow is null)
        {
            return WriteProblemAsync(context, 404, DuplexWire.Codes.NotFound, "Not found", $"There is nothing at '{context.Request.Path}'. The endpoint serves POST sessions, POST sessions/{{id}}/messages, GET sessions/{{id}}/poll and DELETE sessions/{{id}}.");
        }

        context.Response.Headers.Allow = allow;
        return WriteProblemAsync(context, 405, DuplexWire.Codes.MethodNotAllowed, "Method not allowed", $"'{context.Request.Path}' takes {allow}, not {context.Request.Method}.");
    }

    private async Task<string> AnswerPollAsync(HttpContext context, DuplexSession session, PollTicket ticket, long started)
    {
        var time = server.TimeProvider;
        var frames = new List<OutboundFrame>();

        // Wait for the first frame, for at most the poll timeout.
        while (true)
        {
            switch (session.TakeFrames(ticket, frames, out var wait))
            {
                case PollState.Frames:
                    break;
                case PollState.Superseded:
                    await WriteSupersededAsync(context, session.Id);
                    return "superseded";
                case PollState.Ended:
                    await WriteEndedAsync(context, session.Id, session.EndReason ?? DuplexSessionEndReason.ClosedByServer);
                    return "ended";
                default:
                    var remaining = Options.ServerPollTimeout - time.GetElapsedTime(started);
                    if (remaining <= TimeSpan.Zero)
                    {
                        context.Response.StatusCode = StatusCodes.Status204NoContent;
                        context.Response.Headers.CacheControl = "no-store";
                        return "empty";
                    }

                    if (!await WaitAsync(wait!, remaining, context.RequestAborted))
                    {
                        if (context.RequestAborted.IsCancellationRequested)
                        {
                            return "aborted";
                        }
                    }

                    continue;
            }

            break;
        }

        var response = context.Response;
        ticket.Responding = true;
        response.StatusCode = StatusCodes.Status200OK;
        response.ContentType = DuplexWire.ContentTypeOf(session.Encoding);
        response.Headers.CacheControl = "no-store";
        var output = response.BodyWriter;
        try
        {
            WriteFrames(output, session.Encoding, frames);
            if (session.Mode == PollingDuplexMode.MultipleMessagesPerPoll)
            {
                // Keep the response open for the batch window, streaming frames as they come. Frames that are ready
                // together go out in one flush: the response flushes only before it waits, or when a lot is buffered.
                var windowStarted = time.GetTimestamp();
                while (true)
                {
                    frames.Clear();
                    var state = session.TakeFrames(ticket, frames, out var wait);
                    if (state == PollState.Frames)
                    {
                        WriteFrames(output, session.Encoding, frames);
                        if (!output.CanGetUnflushedBytes || output.UnflushedBytes >= FlushThreshold)
                        {
                            await output.FlushAsync(context.RequestAborted);
                        }

                        continue;
                    }

                    await output.FlushAsync(context.RequestAborted);
                    var remaining = Options.BatchWindow - time.GetElapsedTime(windowStarted);
                    if (state != PollState.Waiting || remaining <= TimeSpan.Zero || !await WaitAsync(wait!, remaining, context.RequestAborted))
                    {
                        break;
                    }
                }
            }
            else
            {
                await output.FlushAsync(context.RequestAborted);
            }
        }
        catch (OperationCanceledException) when (context.RequestAborted.IsCancellationRequested)
        {
            // The client went away mid-response; its next poll, with the same ack, gets these frames again.
            return "aborted";
        }

        return "messages";
    }

    private async Task DeliverAsync(HttpContext context, DuplexSession session, List<DuplexFrame> frames)
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
                await WriteOutOfOrderAsync(context, session.Id, received, expected, frames[i].Sequence);
                return;
            }
        }

        for (var i = first; i < frames.Count; i++)
        {
            var frame = frames[i];
            using var activity = PollingDuplexTelemetry.ActivitySource.StartActivity("pollingduplex.message.receive");
            activity?.SetTag(PollingDuplexTelemetry.EndpointTag, server.Endpoint);
            activity?.SetTag("pollingduplex.session.id", session.Id);
            activity?.SetTag("pollingduplex.message.sequence", frame.Sequence);
            try
            {
                await server.Handler.OnMessageAsync(session, frame.Message!, context.RequestAborted);
                session.Received = frame.Sequence;
                server.Metrics.Received();
            }
            catch (DuplexMessageRejectedException ex)
            {
                session.Received = frame.Sequence;
                activity?.SetStatus(System.Diagnostics.ActivityStatusCode.Error, ex.Message);
                await WriteRejectedAsync(context, frame.Sequence, ex.Message, session.Received);
                return;
            }
            catch (Exception ex) when (ex is not OperationCanceledException || !context.RequestAborted.IsCancellationRequested)
            {
                activity?.SetStatus(System.Diagnostics.ActivityStatusCode.Error, ex.Message);
                PollingDuplexServer.LogHandlerFailed(logger, server.Endpoint, session.Id, ex);
                await WriteProblemAsync(context, 500, DuplexWire.Codes.HandlerFailed, "The application failed", $"Message {frame.Sequence} was not received; it may be sent again.", ("received", session.Received));
                return;
            }
        }

        await WriteReceivedAsync(context, session.Received);
    }

    private static async Task<(FrameReadStatus Status, string? Error)> ReadFramesAsync(HttpContext context, PollingDuplexOptions options, DuplexEncoding encoding, List<DuplexFrame> frames)
    {
        var reader = context.Request.BodyReader;
        try
        {
            while (true)
            {
                var result = await reader.ReadAsync(context.RequestAborted);
                var buffer = result.Buffer;
                FrameReadStatus status;
                string? error;
                while ((status = DuplexFrameReader.TryRead(ref buffer, encoding, fromServer: false, options.MaxMessageSize, result.IsCompleted, out var frame, out error)) == FrameReadStatus.Frame)
                {
                    frames.Add(frame);
                }

                reader.AdvanceTo(buffer.Start, buffer.End);
                if (status != FrameReadStatus.NeedMoreData)
                {
                    return (status, error);
                }

                if (result.IsCompleted)
                {
                    return (FrameReadStatus.Frame, null);
                }
            }
        }
        catch (BadHttpRequestException ex) when (ex.StatusCode == StatusCodes.Status413PayloadTooLarge)
        {
            return (FrameReadStatus.TooLarge, $"the request exceeds the {options.MaxSendRequestSize}-byte send limit");
        }
    }

    internal static void WriteFrames(PipeWriter output, DuplexEncoding encoding, List<OutboundFrame> frames)
    {
        foreach (var frame in frames)
        {
            if (frame.Message is { } message)
            {
                DuplexFrameWriter.WriteServerMessage(output, encoding, frame.Sequence, message);
            }
            else
            {
                DuplexFrameWriter.WriteGap(output, encoding, frame.Sequence, frame.Missed);
            }
        }
    }

    /// <summary>Waits for the signal, the timeout or the cancellation, whichever is first, without throwing.</summary>
    private async Task<bool> WaitAsync(Task signal, TimeSpan timeout, CancellationToken cancellationToken)
    {
        if (!signal.IsCompleted)
        {
            await signal.WaitAsync(timeout, server.TimeProvider, cancellationToken).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        }

        return signal.IsCompleted;
    }

    /// <summary>Finds the request's session, or answers the failure and returns null.</summary>
    private async Task<DuplexSession?> FindAsync(HttpContext context)
    {
        var id = (string)context.Request.RouteValues["id"]!;
        var lookup = server.Find(id, BearerToken(context), out var session, out var endedBecause);
        if (lookup == SessionLookup.Found)
        {
            return session;
        }

        await WriteLookupFailureAsync(context, id, lookup, endedBecause);
        return null;
    }

    internal static Task WriteLookupFailureAsync(HttpContext context, string id, SessionLookup lookup, DuplexSessionEndReason? endedBecause) => lookup switch
    {
        SessionLookup.MissingToken => WriteProblemAsync(context, 401, DuplexWire.Codes.MissingToken, "Missing token", "Send the session's token: Authorization: Bearer <token>."),
        SessionLookup.InvalidToken => WriteProblemAsync(context, 403, DuplexWire.Codes.InvalidToken, "Invalid token", $"The token does not belong to session {id}."),
        SessionLookup.Ended => WriteEndedAsync(context, id, endedBecause ?? DuplexSessionEndReason.ClosedByServer),
        _ => WriteProblemAsync(context, 404, DuplexWire.Codes.UnknownSession, "Unknown session", $"There is no session {id}. Open a new one."),
    };

    internal static Task WriteEndedAsync(HttpContext context, string id, DuplexSessionEndReason reason) => reason switch
    {
        DuplexSessionEndReason.ClosedByClient => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionClosed, "Session closed", $"Session {id} was closed by its client."),
        DuplexSessionEndReason.Expired => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionExpired, "Session expired", $"Session {id} had no request within the inactivity timeout and was ended."),
        DuplexSessionEndReason.Overflow => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionFaulted, "Session faulted", $"Session {id} faulted: overflow. Its pending buffer was full; the client did not keep up."),
        DuplexSessionEndReason.ServerShutdown => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionFaulted, "Session faulted", $"Session {id} ended: the server is shutting down."),
        _ => WriteProblemAsync(context, 410, DuplexWire.Codes.SessionFaulted, "Session faulted", $"Session {id} was closed by the server."),
    };

    internal static string? BearerToken(HttpContext context)
    {
        var header = context.Request.Headers.Authorization.ToString();
        const string Scheme = "Bearer ";
        return header.StartsWith(Scheme, StringComparison.OrdinalIgnoreCase) && header.Length > Scheme.Length ? header[Scheme.Length..].Trim() : null;
    }

    internal static async Task WriteProblemAsync(HttpContext context, int status, string code, string title, string detail, (string Name, object Value)? extra = null)
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
            response.Headers.WWWAuthenticate = "Bearer";
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
