using System.Buffers;
using System.Collections.Concurrent;
using System.Globalization;
using System.Text.Json;
using ChannelPool.PollingDuplex;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace ChannelPool.Perf.Peers.Floor;

/// <summary>
/// The floor for one long-poll delivery: the least a Kestrel endpoint can do to hold a request and answer it with the
/// bytes one of our deliveries carries. <c>POST {pattern}/publish?topic=t&amp;frames=k</c> takes a JSON value and makes
/// one response body of k binary frames, each the notification <c>{"topic":"t","data":…}</c> our pub/sub service would
/// send; <c>GET {pattern}/poll?topic=t&amp;after=n</c> answers with the topic's newest body once its number is above n,
/// or 204 after the poll timeout. No sessions, tokens, acknowledgements, queues, limits or telemetry: what is left is HTTP itself.
/// </summary>
internal static class FloorEndpoint
{
    public static void MapFloor(this IEndpointRouteBuilder endpoints, string pattern, TimeSpan pollTimeout)
    {
        var boards = new ConcurrentDictionary<string, Board>(StringComparer.Ordinal);
        endpoints.MapPost(pattern + "/publish", async context =>
        {
            var request = context.Request;
            if (!int.TryParse(request.Query["frames"], NumberStyles.None, CultureInfo.InvariantCulture, out var frames) || frames is < 1 or > 1024)
            {
                context.Response.StatusCode = StatusCodes.Status400BadRequest;
                await context.Response.WriteAsync("frames must be a whole number from 1 to 1024.", context.RequestAborted);
                return;
            }

            using var body = new MemoryStream();
            await request.Body.CopyToAsync(body, context.RequestAborted);
            var topic = request.Query["topic"].ToString();
            boards.GetOrAdd(topic, static _ => new Board()).Publish(topic, body.ToArray(), frames);
            context.Response.StatusCode = StatusCodes.Status204NoContent;
        });
        endpoints.MapGet(pattern + "/poll", async context =>
        {
            if (!long.TryParse(context.Request.Query["after"], NumberStyles.None, CultureInfo.InvariantCulture, out var after))
            {
                context.Response.StatusCode = StatusCodes.Status400BadRequest;
                await context.Response.WriteAsync("after must be a whole number from 0.", context.RequestAborted);
                return;
            }

            var board = boards.GetOrAdd(context.Request.Query["topic"].ToString(), static _ => new Board());
            var tick = board.Current;
            if (tick.Number <= after)
            {
                var next = tick.Next.Task;
                await next.WaitAsync(pollTimeout, context.RequestAborted).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
                if (!next.IsCompleted)
                {
                    context.Response.StatusCode = StatusCodes.Status204NoContent;
                    return;
                }

                tick = board.Current;
            }

            context.Response.ContentType = DuplexWire.ContentTypeOf(DuplexEncoding.Binary);
            context.Response.ContentLength = tick.Body.Length;
            await context.Response.BodyWriter.WriteAsync(tick.Body, context.RequestAborted);
        });
    }

    /// <summary>The newest published body, and a task the next one completes: every held poll waits on the same task.</summary>
    private sealed class Board
    {
        private readonly Lock _lock = new();
        private Tick _current = new(0, [], new(TaskCreationOptions.RunContinuationsAsynchronously));

        public Tick Current => Volatile.Read(ref _current);

        public void Publish(string topic, byte[] data, int frames)
        {
            var notification = DuplexMessage.FromJsonUtf8((byte[])[.. JsonSerializer.SerializeToUtf8Bytes(new { topic }).AsSpan(0..^1), .. ",\"data\":"u8, .. data, (byte)'}']);
            Tick previous, next;
            using (_lock.EnterScope())
            {
                previous = _current;
                var body = new ArrayBufferWriter<byte>();
                for (var i = 0; i < frames; i++)
                {
                    // Every frame carries the tick's number, so a client's next poll names the tick it has, as an ack names a frame.
                    DuplexFrameWriter.WriteServerMessage(body, DuplexEncoding.Binary, previous.Number + 1, notification);
                }

                next = new Tick(previous.Number + 1, body.WrittenMemory.ToArray(), new(TaskCreationOptions.RunContinuationsAsynchronously));
                Volatile.Write(ref _current, next);
            }

            previous.Next.TrySetResult();
        }
    }

    private sealed record Tick(long Number, byte[] Body, TaskCompletionSource Next);
}
