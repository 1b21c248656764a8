using System.Globalization;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// One entry of a source's log as this node read it: read once per node, and its message made once, so every session
/// on the node that takes it writes the same bytes (serialized once, as on one node).
/// </summary>
internal sealed class RedisLogEntry
{
    private DuplexMessage? _message;

    private RedisLogEntry(long id, long published, string publisher, ReadOnlyMemory<byte> stored)
    {
        Id = id;
        Published = published;
        Publisher = publisher;
        Stored = stored;
    }

    /// <summary>Gets the entry's id in its log: contiguous, so a gap between two ids is an exact count.</summary>
    public long Id { get; }

    /// <summary>Gets when it was published (Unix ms): whether a session had a poll outstanding then decides if it counts against the session's limit.</summary>
    public long Published { get; }

    /// <summary>Gets the session that published it, which does not receive it; empty when it goes to every reader.</summary>
    public string Publisher { get; }

    /// <summary>Gets the entry as the log and the session queues keep it: 'j' (JSON) or 'b' (bytes), then the payload.</summary>
    public ReadOnlyMemory<byte> Stored { get; }

    /// <summary>Gets the message, made on first use and shared by every response that carries it.</summary>
    public DuplexMessage Message => _message ??= ToMessage(Stored.Span[0], Stored[1..]);

    /// <summary>Reads a log entry, <c>published|publisher|stored</c>.</summary>
    public static RedisLogEntry Parse(long id, RedisResult raw)
    {
        var bytes = (byte[])raw!;
        var a = Array.IndexOf(bytes, (byte)'|');
        var b = Array.IndexOf(bytes, (byte)'|', a + 1);
        var published = long.Parse(bytes.AsSpan(0, a), NumberStyles.None, CultureInfo.InvariantCulture);
        var publisher = System.Text.Encoding.ASCII.GetString(bytes, a + 1, b - a - 1);
        return new RedisLogEntry(id, published, publisher, bytes.AsMemory(b + 1));
    }

    /// <summary>Makes a stored payload a frame's message: JSON checked once, or bytes as they are.</summary>
    public static DuplexMessage ToMessage(byte kind, ReadOnlyMemory<byte> payload) => kind == (byte)'j'
        ? DuplexMessage.FromJsonUtf8(payload)
        : DuplexMessage.FromBytes(payload);

    /// <summary>Stores a message as a log or queue entry: its kind, then its payload.</summary>
    public static RedisValue Store(DuplexMessage message)
    {
        var stored = new byte[message.Payload.Length + 1];
        stored[0] = message.IsJson ? (byte)'j' : (byte)'b';
        message.Payload.Span.CopyTo(stored.AsSpan(1));
        return stored;
    }
}

/// <summary>What a poll offers its session from one source: entries from <see cref="FirstId"/>, of the log whose epoch is <see cref="Epoch"/>.</summary>
/// <param name="Source">The source's name.</param>
/// <param name="Epoch">The log's epoch.</param>
/// <param name="FirstId">The first entry's id.</param>
/// <param name="LogStart">The log's first id when it was read: a cursor before it missed what lies between.</param>
/// <param name="Entries">The entries, contiguous.</param>
/// <param name="More">Whether the log had more after them than the offer could carry.</param>
internal sealed record RedisOffer(string Source, string Epoch, long FirstId, long LogStart, IReadOnlyList<RedisLogEntry> Entries, bool More = false);
