using System.Globalization;
using System.Net.WebSockets;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace ChannelPool.Perf.Servers;

/// <summary>
/// The raw ASP.NET Core WebSocket baseline for poll-modes: <c>GET /ws/flood?size=S&amp;type=binary|text</c> upgrades, then
/// the server sends S-byte messages back to back, each awaited (the socket's own backpressure), until the client closes.
/// </summary>
internal static class WebSocketFlood
{
    public static void MapWebSocketFlood(this IEndpointRouteBuilder endpoints, string pattern) =>
        endpoints.Map(pattern, async context =>
        {
            if (!context.WebSockets.IsWebSocketRequest)
            {
                context.Response.StatusCode = StatusCodes.Status400BadRequest;
                await context.Response.WriteAsync("This endpoint takes WebSocket requests only.", context.RequestAborted);
                return;
            }

            if (!int.TryParse(context.Request.Query["size"], NumberStyles.None, CultureInfo.InvariantCulture, out var size)
                || size is < FloodPayload.MinSize or > FloodPayload.MaxSize)
            {
                context.Response.StatusCode = StatusCodes.Status400BadRequest;
                await context.Response.WriteAsync($"size must be {FloodPayload.MinSize} to {FloodPayload.MaxSize} bytes.", context.RequestAborted);
                return;
            }

            var type = context.Request.Query["type"] == "text" ? WebSocketMessageType.Text : WebSocketMessageType.Binary;
            var payload = FloodPayload.Create(size);
            using var socket = await context.WebSockets.AcceptWebSocketAsync();
            var closed = WatchForCloseAsync(socket);
            try
            {
                while (!closed.IsCompleted && socket.State == WebSocketState.Open)
                {
                    await socket.SendAsync(payload, type, endOfMessage: true, context.RequestAborted);
                }
            }
            catch (Exception ex) when (ex is WebSocketException or OperationCanceledException or IOException)
            {
                // The client went away: the flood is over.
            }

            await closed;
            if (socket.State == WebSocketState.CloseReceived)
            {
                // Answered here, after the last send: a WebSocket takes one send (and a close is a send) at a time.
                try
                {
                    await socket.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, null, CancellationToken.None);
                }
                catch (Exception ex) when (ex is WebSocketException or IOException)
                {
                    // The client did not wait for the answer.
                }
            }
        });

    private static async Task WatchForCloseAsync(WebSocket socket)
    {
        var buffer = new byte[256];
        try
        {
            while (socket.State == WebSocketState.Open)
            {
                var result = await socket.ReceiveAsync(buffer, CancellationToken.None);
                if (result.MessageType == WebSocketMessageType.Close)
                {
                    return;
                }
            }
        }
        catch (Exception ex) when (ex is WebSocketException or OperationCanceledException or IOException)
        {
            // Aborted: nothing more to read.
        }
    }
}
