using System.Buffers;
using System.Collections.Concurrent;
using System.Globalization;

namespace ChannelPool.PollingDuplex.BrowserHost;

/// <summary>
/// The floor under the browser client's throughput (clients/polling-duplex/perf): <c>GET {pattern}/{encoding}?frames=W&amp;size=S</c>
/// answers with exactly the body a full-window MultipleMessagesPerPoll flood response carries (W message frames of the
/// flood's S-byte message, numbered from <see cref="FirstSequence"/>), written as the poll responder writes a full window:
/// one write with a Content-Length. No session, no store, no acknowledgement: what is left is HTTP and the browser.
/// </summary>
internal static class FloorEndpoint
{
    /// <summary>The first frame's sequence number: a flood's sessions are past a million within seconds, so text frames carry as many digits.</summary>
    public const long FirstSequence = 1_000_000;

    /// <summary>The most frames one floor response carries (a window far past any the measurements use).</summary>
    public const int MaxFrames = 65_536;

    /// <summary>The largest floor body, so that a mistyped query cannot make the test server allocate gigabytes.</summary>
    public const long MaxBodyBytes = 64L * 1024 * 1024;

    private static readonly ConcurrentDictionary<(DuplexEncoding Encoding, int Frames, int Size), byte[]> Bodies = new();

    public static void MapFloorEndpoint(this IEndpointRouteBuilder endpoints, string pattern)
    {
        endpoints.MapGet(pattern + "/{encoding}", async (HttpContext context, string encoding, string? frames, string? size) =>
        {
            var (request, error) = Read(encoding, frames, size);
            if (request is not { } key)
            {
                return Results.Problem(detail: error, statusCode: StatusCodes.Status400BadRequest, title: "Bad floor request");
            }

            if (Bodies.Count >= 16 && !Bodies.ContainsKey(key))
            {
                // A run asks for a handful of shapes; a caller that asks for many gets them built again, not kept.
                Bodies.Clear();
            }

            var body = Bodies.GetOrAdd(key, k => Build(k.Encoding, k.Frames, k.Size));
            context.Response.ContentType = DuplexWire.ContentTypeOf(key.Encoding);
            context.Response.Headers.CacheControl = "no-store";
            context.Response.ContentLength = body.Length;
            await context.Response.Body.WriteAsync(body, context.RequestAborted);
            return Results.Empty;
        });
    }

    /// <summary>The request's encoding, frame count and message size, or what is wrong with them.</summary>
    internal static ((DuplexEncoding Encoding, int Frames, int Size)? Value, string? Error) Read(string encoding, string? frames, string? size)
    {
        DuplexEncoding? duplexEncoding = encoding switch
        {
            "binary" => DuplexEncoding.Binary,
            "text" => DuplexEncoding.Text,
            _ => null,
        };
        if (duplexEncoding is null)
        {
            return (null, $"The floor's encoding is 'binary' or 'text' (GET /floor/binary?frames=256&size=256); got '{encoding}'.");
        }

        if (!int.TryParse(frames, NumberStyles.None, CultureInfo.InvariantCulture, out var count) || count is < 1 or > MaxFrames)
        {
            return (null, string.Create(CultureInfo.InvariantCulture, $"The floor's 'frames' is the window, a whole number from 1 to {MaxFrames:N0}; got '{frames ?? "(none)"}'."));
        }

        if (!int.TryParse(size, NumberStyles.None, CultureInfo.InvariantCulture, out var bytes) || FloodHandler.SizeError(bytes) is not null)
        {
            return (null, string.Create(CultureInfo.InvariantCulture, $"The floor's 'size' is the flood message's size, a whole number from {FloodHandler.MinSize} to {FloodHandler.MaxSize:N0}; got '{size ?? "(none)"}'."));
        }

        var length = (long)count * (bytes + 64);
        if (length > MaxBodyBytes)
        {
            return (null, string.Create(CultureInfo.InvariantCulture, $"A floor body of {count:N0} frames of {bytes:N0} bytes is over the {MaxBodyBytes / (1024 * 1024)} MiB this endpoint serves; ask for fewer frames or smaller ones."));
        }

        return ((duplexEncoding.Value, count, bytes), null);
    }

    private static byte[] Build(DuplexEncoding encoding, int frames, int size)
    {
        var message = FloodHandler.Message(encoding, size);
        var output = new ArrayBufferWriter<byte>();
        for (var i = 0; i < frames; i++)
        {
            DuplexFrameWriter.WriteServerMessage(output, encoding, FirstSequence + i, message);
        }

        return output.WrittenSpan.ToArray();
    }
}
