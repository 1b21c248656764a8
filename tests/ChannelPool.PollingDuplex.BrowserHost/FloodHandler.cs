using System.Text;
using System.Text.Json;

namespace ChannelPool.PollingDuplex.BrowserHost;

/// <summary>
/// The throughput flood, as the perf console's poll-modes scenario runs it: a client sends <c>{"size":S}</c>, and the
/// server sends it S-byte JSON messages as fast as the client takes them (SendAsync waits for room) until the session ends.
/// </summary>
internal sealed class FloodHandler : PollingDuplexHandler
{
    public override ValueTask OnMessageAsync(DuplexSession session, DuplexMessage message, CancellationToken cancellationToken)
    {
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

        if (size is < 16 or > 60 * 1024)
        {
            throw new DuplexMessageRejectedException($"A flood message is 16 to 61,440 bytes; got {size}.");
        }

        const string Head = "{\"flood\":\"";
        const string Tail = "\"}";
        var json = Encoding.UTF8.GetBytes(Head + new string('x', size - Head.Length - Tail.Length) + Tail);

        // One message instance, sent again and again: the flood measures the transport, not serialization.
        var flood = session.Encoding == DuplexEncoding.Binary ? DuplexMessage.FromBytes(json) : DuplexMessage.FromJsonUtf8(json);
        _ = Task.Run(async () =>
        {
            while (await session.SendAsync(flood) == DuplexSendResult.Queued)
            {
            }
        }, CancellationToken.None);
        return ValueTask.CompletedTask;
    }
}
