using System.Globalization;
using System.Text;
using System.Text.Json;

namespace ChannelPool.PollingDuplex.BrowserHost;

/// <summary>
/// The throughput flood, as the perf console's poll-modes scenario runs it: a client sends <c>{"size":S}</c>, and the
/// server sends it S-byte JSON messages as fast as the client takes them (SendAsync waits for room) until the session ends.
/// </summary>
internal sealed class FloodHandler : PollingDuplexHandler
{
    /// <summary>The smallest and largest flood message, in bytes.</summary>
    public const int MinSize = 16;

    /// <inheritdoc cref="MinSize"/>
    public const int MaxSize = 60 * 1024;

    /// <summary>Why a flood message cannot be <paramref name="size"/> bytes, or null when it can.</summary>
    public static string? SizeError(int size) =>
        size is < MinSize or > MaxSize ? string.Create(CultureInfo.InvariantCulture, $"A flood message is {MinSize} to {MaxSize:N0} bytes; got {size}.") : null;

    /// <summary>The flood's message of <paramref name="size"/> bytes (checked with <see cref="SizeError"/>) in an encoding.</summary>
    public static DuplexMessage Message(DuplexEncoding encoding, int size)
    {
        const string Head = "{\"flood\":\"";
        const string Tail = "\"}";
        var json = Encoding.UTF8.GetBytes(Head + new string('x', size - Head.Length - Tail.Length) + Tail);
        return encoding == DuplexEncoding.Binary ? DuplexMessage.FromBytes(json) : DuplexMessage.FromJsonUtf8(json);
    }

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

        if (SizeError(size) is { } error)
        {
            throw new DuplexMessageRejectedException(error);
        }

        // One message instance, sent again and again: the flood measures the transport, not serialization.
        var flood = Message(session.Encoding, size);

        _ = Task.Run(async () =>
        {
            while (await session.SendAsync(flood) == DuplexSendResult.Queued)
            {
            }
        }, CancellationToken.None);
        return ValueTask.CompletedTask;
    }
}
