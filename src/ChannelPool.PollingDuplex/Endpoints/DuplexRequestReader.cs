using System.Buffers;
using System.Globalization;
using System.Net.Http.Headers;
using System.Text.Json;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Http.Features.Authentication;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// Reads what a request carries: the session id and token, an open's body, a send's frames, a poll's ack. A reader that
/// finds the request bad answers it (through <see cref="DuplexProblems"/>) and returns null, so a handler only goes on
/// with what it can use.
/// </summary>
internal static class DuplexRequestReader
{
    private const int MaxOpenBodySize = 4096;

    /// <summary>Gets the session id from the request's path.</summary>
    public static string SessionId(HttpContext context) => (string)context.Request.RouteValues["id"]!;

    /// <summary>Gets the session token from its own header (<see cref="DuplexWire.SessionTokenHeader"/>), or null.</summary>
    public static string? Token(HttpContext context) =>
        context.Request.Headers[DuplexWire.SessionTokenHeader] is [{ Length: > 0 } token] ? token.Trim() : null;

    /// <summary>
    /// Gets the request's user id through the endpoint's selector: <see langword="null"/> for an anonymous request. A
    /// signed-in user the selector gives no id (no id claim, an empty one, or a selector that throws
    /// <see cref="InvalidOperationException"/> for it) is never taken for anonymous: the request is answered
    /// <c>403 unidentified-user</c> and this returns false. An empty id is refused even from an unauthenticated principal.
    /// </summary>
    /// <remarks>
    /// Read from the authentication feature rather than <c>HttpContext.User</c>, whose getter makes an empty principal
    /// for a request no authentication ran on: an anonymous poll allocates nothing for identity.
    /// </remarks>
    public static async ValueTask<(bool Known, string? UserId)> ReadUserAsync(HttpContext context, PollingDuplexOptions options)
    {
        if (context.Features.Get<IHttpAuthenticationFeature>()?.User is not { } user)
        {
            return (true, null);
        }

        string? id;
        try
        {
            id = options.UserIdSelector(user);
        }
        catch (InvalidOperationException ex)
        {
            await DuplexProblems.WriteUnidentifiedUserAsync(context, ex.Message);
            return (false, null);
        }

        if (id is { Length: > 0 })
        {
            return (true, id);
        }

        if (id is not null || user.Identity is { IsAuthenticated: true })
        {
            await DuplexProblems.WriteUnidentifiedUserAsync(context, id is null
                ? "The request is signed in, but PollingDuplexOptions.UserIdSelector gave no user id for it, so its sessions could not be bound to a user. The application's authentication must give every user an id (or the selector must say which claim holds it)."
                : "The request's user id is empty. An empty id is not anonymous; the application's authentication must give every user a non-empty id.");
            return (false, null);
        }

        return (true, null);
    }

    /// <summary>
    /// Gets when the request's sign-in expires (<c>AuthenticationProperties.ExpiresUtc</c> of the authentication that
    /// set its user, as SignalR reads it), or null when it has no expiry or the request is anonymous.
    /// </summary>
    public static DateTimeOffset? SignInExpiry(HttpContext context) =>
        context.Features.Get<IAuthenticateResultFeature>()?.AuthenticateResult?.Properties?.ExpiresUtc;

    /// <summary>Reads a poll's <c>ack</c>: the highest sequence number the client received, a whole number from 0.</summary>
    public static bool TryReadAck(HttpContext context, out long ack) =>
        long.TryParse(context.Request.Query["ack"].ToString(), NumberStyles.None, CultureInfo.InvariantCulture, out ack);

    /// <summary>
    /// Reads and checks the open: its content type (<c>application/json</c>, which a cross-site form cannot send) and its
    /// body (an optional JSON object naming the encoding, the mode and the client's <c>openId</c>), or answers what is
    /// wrong with it and returns null.
    /// </summary>
    public static async Task<DuplexOpenRequest?> ReadOpenRequestAsync(HttpContext context)
    {
        if (!MediaTypeHeaderValue.TryParse(context.Request.ContentType, out var contentType) || !string.Equals(contentType.MediaType, "application/json", StringComparison.OrdinalIgnoreCase))
        {
            await DuplexProblems.WriteOpenContentTypeAsync(context);
            return null;
        }

        var encoding = DuplexEncoding.Text;
        var mode = PollingDuplexMode.MultipleMessagesPerPoll;
        string? openId = null;
        var body = await ReadOpenBodyAsync(context);
        if (body is null)
        {
            await DuplexProblems.WriteOpenBodyTooLargeAsync(context, MaxOpenBodySize);
            return null;
        }

        if (!System.Text.Unicode.Utf8.IsValid(body))
        {
            await DuplexProblems.WriteBadOpenRequestAsync(context, "The open body is not valid UTF-8.");
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
                    await DuplexProblems.WriteBadOpenRequestAsync(context, $"Unknown encoding {e.GetRawText()}; use \"text\" or \"binary\".");
                    return null;
                }

                if (document.RootElement.TryGetProperty("mode", out var m) && !DuplexWire.TryParseMode(m.ValueKind == JsonValueKind.String ? m.GetString() : null, out mode))
                {
                    await DuplexProblems.WriteBadOpenRequestAsync(context, $"Unknown mode {m.GetRawText()}; use \"single\" or \"multiple\".");
                    return null;
                }

                if (document.RootElement.TryGetProperty("openId", out var o) && !DuplexOpenRequest.IsOpenId(openId = o.ValueKind == JsonValueKind.String ? o.GetString() : null))
                {
                    await DuplexProblems.WriteBadOpenRequestAsync(context, $"Bad openId {o.GetRawText()}: it must be a string of {DuplexOpenRequest.MinOpenIdLength} to {DuplexOpenRequest.MaxOpenIdLength} characters of A-Z, a-z, 0-9, '_' and '-', new for each open (and reused only by its retries).");
                    return null;
                }
            }
            catch (JsonException ex)
            {
                await DuplexProblems.WriteBadOpenRequestAsync(context, $"The open body is not a JSON object: {ex.Message}");
                return null;
            }
        }

        return new DuplexOpenRequest(encoding, mode, openId);
    }

    /// <summary>
    /// Checks a send's content type and size and reads its frames, or answers what is wrong and returns null. Nothing is
    /// delivered from a request with a bad frame.
    /// </summary>
    public static async Task<List<DuplexFrame>?> ReadSendRequestAsync(HttpContext context, PollingDuplexOptions options, string sessionId, DuplexEncoding encoding)
    {
        var request = context.Request;
        if (!MediaTypeHeaderValue.TryParse(request.ContentType, out var contentType) || !string.Equals(contentType.MediaType, DuplexWire.ContentTypeOf(encoding), StringComparison.OrdinalIgnoreCase))
        {
            await DuplexProblems.WriteWrongContentTypeAsync(context, sessionId, encoding);
            return null;
        }

        if (request.ContentLength > options.MaxSendRequestSize)
        {
            await DuplexProblems.WriteRequestTooLargeAsync(context, options);
            return null;
        }

        if (context.Features.Get<IHttpMaxRequestBodySizeFeature>() is { IsReadOnly: false } limit)
        {
            limit.MaxRequestBodySize = options.MaxSendRequestSize;
        }

        var frames = new List<DuplexFrame>();
        var (status, error) = await ReadFramesAsync(context, options, encoding, frames);
        if (status != DuplexFrameReadStatus.Frame)
        {
            await DuplexProblems.WriteBadFrameAsync(context, status, frames.Count + 1, error);
            return null;
        }

        return frames;
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

    /// <summary>Reads every frame of the body; <see cref="DuplexFrameReadStatus.Frame"/> when all were read.</summary>
    private static async Task<(DuplexFrameReadStatus Status, string? Error)> ReadFramesAsync(HttpContext context, PollingDuplexOptions options, DuplexEncoding encoding, List<DuplexFrame> frames)
    {
        var reader = context.Request.BodyReader;
        try
        {
            while (true)
            {
                var result = await reader.ReadAsync(context.RequestAborted);
                var buffer = result.Buffer;
                DuplexFrameReadStatus status;
                string? error;
                while ((status = DuplexFrameReader.TryRead(ref buffer, encoding, fromServer: false, options.MaxMessageSize, result.IsCompleted, out var frame, out error)) == DuplexFrameReadStatus.Frame)
                {
                    frames.Add(frame);
                }

                reader.AdvanceTo(buffer.Start, buffer.End);
                if (status != DuplexFrameReadStatus.NeedMoreData)
                {
                    return (status, error);
                }

                if (result.IsCompleted)
                {
                    return (DuplexFrameReadStatus.Frame, null);
                }
            }
        }
        catch (BadHttpRequestException ex) when (ex.StatusCode == StatusCodes.Status413PayloadTooLarge)
        {
            return (DuplexFrameReadStatus.TooLarge, $"the request exceeds the {options.MaxSendRequestSize}-byte send limit");
        }
    }
}
