using System.Text;

namespace ChannelPool.PollingDuplex.BrowserHost;

/// <summary>
/// A server that breaks the protocol on purpose: it opens sessions as the real one does, then answers the first poll
/// with one good frame followed by one that cannot be read (in text, a line that is not JSON; in binary, an unknown
/// frame kind). The session's id is its encoding, so the poll knows which to send. It counts polls, so a test can
/// prove the client stopped instead of polling on.
/// </summary>
internal static class BrokenEndpoint
{
    private static int _polls;

    public static int Polls => Volatile.Read(ref _polls);

    public static void MapBrokenEndpoint(this IEndpointRouteBuilder endpoints, string pattern)
    {
        var group = endpoints.MapGroup(pattern);
        group.MapPost("/sessions", async (HttpContext context) =>
        {
            using var body = await System.Text.Json.JsonDocument.ParseAsync(context.Request.Body);
            var encoding = body.RootElement.GetProperty("encoding").GetString();
            var mode = body.RootElement.GetProperty("mode").GetString();
            return Results.Json(
                new
                {
                    protocolVersion = 1, sessionId = encoding, token = "broken", encoding, mode, serverPollTimeoutMs = 5000, inactivityTimeoutMs = 60000,
                    firstPollTimeoutMs = 5000, maxMessageSize = 65536, maxSendRequestSize = 1048576, maxPendingMessages = 64, maxPendingBytes = 1048576,
                    batchWindowMs = 20, overflowPolicy = "fault",
                },
                statusCode: StatusCodes.Status201Created);
        });
        group.MapPost("/sessions/{id}/messages", () => Results.Json(new { received = 0 }));
        group.MapDelete("/sessions/{id}", () => Results.NoContent());
        group.MapGet("/sessions/{id}/poll", async (HttpContext context, string id) =>
        {
            Interlocked.Increment(ref _polls);
            if (context.Request.Query["ack"] != "0")
            {
                // A client that polls past the broken frame did not stop: hold it, as a server with nothing to send does.
                await Task.Delay(TimeSpan.FromSeconds(5), context.RequestAborted);
                context.Response.StatusCode = StatusCodes.Status204NoContent;
                return;
            }

            if (id == "binary")
            {
                context.Response.ContentType = "application/vnd.channelpool.duplex-frames";
                byte[] good = [0x01, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, (byte)'o', (byte)'k'];
                byte[] broken = [0x07, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0];
                await context.Response.Body.WriteAsync(good.Concat(broken).ToArray());
            }
            else
            {
                context.Response.ContentType = "application/x-ndjson";
                await context.Response.WriteAsync("{\"seq\":1,\"type\":\"message\",\"data\":\"ok\"}\n{\"seq\":2,\"type\":\"message\",\"data\":oops}\n", Encoding.UTF8);
            }
        });
    }
}
