using System.Buffers;
using System.Buffers.Binary;
using System.Buffers.Text;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// Writes frames of either encoding. The payload bytes are copied as they are: nothing is serialized again, so a
/// message broadcast to many sessions costs one copy per frame.
/// </summary>
public static class DuplexFrameWriter
{
    /// <summary>Writes a server-to-client message frame.</summary>
    /// <param name="output">Where the frame goes.</param>
    /// <param name="encoding">The session's encoding.</param>
    /// <param name="sequence">The message's sequence number.</param>
    /// <param name="message">The message; a text session takes JSON messages only.</param>
    /// <exception cref="InvalidOperationException">A raw-bytes message was written in the text encoding.</exception>
    public static void WriteServerMessage(IBufferWriter<byte> output, DuplexEncoding encoding, long sequence, DuplexMessage message) =>
        WriteMessage(output, encoding, sequence, message, ",\"type\":\"message\",\"data\":"u8);

    /// <summary>Writes a gap frame: <paramref name="missed"/> messages were dropped at <paramref name="sequence"/>.</summary>
    /// <param name="output">Where the frame goes.</param>
    /// <param name="encoding">The session's encoding.</param>
    /// <param name="sequence">The sequence number the gap takes.</param>
    /// <param name="missed">How many messages were dropped.</param>
    public static void WriteGap(IBufferWriter<byte> output, DuplexEncoding encoding, long sequence, long missed)
    {
        ArgumentNullException.ThrowIfNull(output);
        if (encoding == DuplexEncoding.Binary)
        {
            Span<byte> count = stackalloc byte[sizeof(ulong)];
            BinaryPrimitives.WriteUInt64BigEndian(count, (ulong)missed);
            WriteBinary(output, DuplexFrameKind.Gap, sequence, count);
            return;
        }

        WriteAscii(output, "{\"seq\":"u8);
        WriteNumber(output, sequence);
        WriteAscii(output, ",\"type\":\"gap\",\"missed\":"u8);
        WriteNumber(output, missed);
        WriteAscii(output, "}\n"u8);
    }

    /// <summary>
    /// Gets how many bytes <see cref="WriteServerMessage"/> or <see cref="WriteGap"/> writes for <paramref name="frame"/>,
    /// so that a response whose frames are all known before it starts can carry a <c>Content-Length</c>.
    /// </summary>
    /// <param name="encoding">The session's encoding.</param>
    /// <param name="frame">A message or a gap, as the server writes it.</param>
    /// <returns>The frame's length in bytes.</returns>
    public static int ServerFrameLength(DuplexEncoding encoding, DuplexFrame frame)
    {
        if (encoding == DuplexEncoding.Binary)
        {
            return DuplexWire.BinaryHeaderSize + (frame.Message is { } payload ? payload.Payload.Length : sizeof(ulong));
        }

        return frame.Message is { } message
            ? "{\"seq\":"u8.Length + Digits(frame.Sequence) + ",\"type\":\"message\",\"data\":"u8.Length + message.Payload.Length + "}\n"u8.Length
            : "{\"seq\":"u8.Length + Digits(frame.Sequence) + ",\"type\":\"gap\",\"missed\":"u8.Length + Digits(frame.Missed) + "}\n"u8.Length;
    }

    /// <summary>Writes a client-to-server message frame.</summary>
    /// <param name="output">Where the frame goes.</param>
    /// <param name="encoding">The session's encoding.</param>
    /// <param name="sequence">The message's sequence number.</param>
    /// <param name="message">The message; a text session takes JSON messages only.</param>
    /// <exception cref="InvalidOperationException">A raw-bytes message was written in the text encoding.</exception>
    public static void WriteClientMessage(IBufferWriter<byte> output, DuplexEncoding encoding, long sequence, DuplexMessage message) =>
        WriteMessage(output, encoding, sequence, message, ",\"data\":"u8);

    // A message frame either way: the same binary frame, and text that differs only in the fields between seq and data.
    private static void WriteMessage(IBufferWriter<byte> output, DuplexEncoding encoding, long sequence, DuplexMessage message, ReadOnlySpan<byte> beforeData)
    {
        ArgumentNullException.ThrowIfNull(output);
        ArgumentNullException.ThrowIfNull(message);
        if (encoding == DuplexEncoding.Binary)
        {
            WriteBinary(output, DuplexFrameKind.Message, sequence, message.Payload.Span);
            return;
        }

        EnsureJson(message);
        WriteAscii(output, "{\"seq\":"u8);
        WriteNumber(output, sequence);
        WriteAscii(output, beforeData);
        WriteAscii(output, message.Payload.Span);
        WriteAscii(output, "}\n"u8);
    }

    private static void EnsureJson(DuplexMessage message)
    {
        if (!message.IsJson)
        {
            throw new InvalidOperationException("A text session carries JSON messages only; this message holds raw bytes (DuplexMessage.FromBytes).");
        }
    }

    private static void WriteBinary(IBufferWriter<byte> output, DuplexFrameKind kind, long sequence, ReadOnlySpan<byte> payload)
    {
        var span = output.GetSpan(DuplexWire.BinaryHeaderSize);
        span[0] = (byte)kind;
        BinaryPrimitives.WriteUInt64BigEndian(span[1..], (ulong)sequence);
        BinaryPrimitives.WriteUInt32BigEndian(span[9..], (uint)payload.Length);
        output.Advance(DuplexWire.BinaryHeaderSize);
        output.Write(payload);
    }

    private static void WriteAscii(IBufferWriter<byte> output, ReadOnlySpan<byte> bytes) => output.Write(bytes);

    private static int Digits(long value)
    {
        Span<byte> scratch = stackalloc byte[20];
        Utf8Formatter.TryFormat(value, scratch, out var written);
        return written;
    }

    private static void WriteNumber(IBufferWriter<byte> output, long value)
    {
        var span = output.GetSpan(20);
        Utf8Formatter.TryFormat(value, span, out var written);
        output.Advance(written);
    }
}
