using System.Text.Json;
using ChannelPool.PollingDuplex;
using Microsoft.Extensions.Logging;

namespace ChannelPool.Perf.Servers;

/// <summary>
/// The poll-modes flood on the polling duplex: a client sends <c>{"size":S}</c>, and the server sends it S-byte messages
/// as fast as the client takes them (<see cref="DuplexSession.SendAsync"/> waits for room) until the session ends.
/// </summary>
internal sealed partial class FloodHandler(ILogger<FloodHandler> logger) : PollingDuplexHandler
{
    public override ValueTask OnMessageAsync(DuplexSession session, DuplexMessage message, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(session);
        ArgumentNullException.ThrowIfNull(message);
        int size;
        try
        {
            using var command = JsonDocument.Parse(message.Payload);
            size = command.RootElement.GetProperty("size").GetInt32();
        }
        catch (Exception ex) when (ex is JsonException or KeyNotFoundException or InvalidOperationException or FormatException)
        {
            throw new DuplexMessageRejectedException("A flood command is {\"size\":<bytes>}.", ex);
        }

        if (size is < FloodPayload.MinSize or > FloodPayload.MaxSize)
        {
            throw new DuplexMessageRejectedException($"A flood message size must be {FloodPayload.MinSize} to {FloodPayload.MaxSize} bytes; got {size}.");
        }

        // One message instance sent again and again: the flood measures the transport, not serialization.
        var flood = DuplexMessage.FromJsonUtf8(FloodPayload.Create(size));
        _ = Task.Run(() => PumpAsync(session, flood), CancellationToken.None);
        return ValueTask.CompletedTask;
    }

    private async Task PumpAsync(DuplexSession session, DuplexMessage flood)
    {
        try
        {
            while (await session.SendAsync(flood).ConfigureAwait(false) == DuplexSendResult.Queued)
            {
            }
        }
        catch (Exception ex)
        {
            LogPumpFailed(logger, ex, session.Id);
        }
    }

    [LoggerMessage(1, LogLevel.Error, "The flood on session {SessionId} failed.")]
    private static partial void LogPumpFailed(ILogger logger, Exception exception, string sessionId);
}
