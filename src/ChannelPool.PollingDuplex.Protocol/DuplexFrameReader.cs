using System.Buffers;
using System.Buffers.Binary;
using System.Text.Json;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// Reads frames of either encoding from a buffer that may hold part of a frame, one frame or many. Both the server (a
/// client's sends) and the client (poll responses) read with it, so both sides accept exactly the same bytes.
/// </summary>
public static class DuplexFrameReader
{
    // A text line is its payload plus at most this much: braces, seq, type and missed members, separators.
    private const int TextFrameOverhead = 256;

    /// <summary>Reads the frame at the start of <paramref name="buffer"/> and, on success, moves past it.</summary>
    /// <param name="buffer">The unread bytes.</param>
    /// <param name="encoding">The session's encoding.</param>
    /// <param name="fromServer">Whether this is a server-to-client frame (which may also be a gap).</param>
    /// <param name="maxPayload">The largest payload allowed.</param>
    /// <param name="isFinalBlock">Whether no more bytes will come: a partial frame is then malformed, not incomplete.</param>
    /// <param name="frame">The frame read.</param>
    /// <param name="error">Why the bytes are malformed or too large.</param>
    /// <returns>What was found.</returns>
    public static DuplexFrameReadStatus TryRead(
        ref ReadOnlySequence<byte> buffer,
        DuplexEncoding encoding,
        bool fromServer,
        int maxPayload,
        bool isFinalBlock,
        out DuplexFrame frame,
        out string? error) =>
        encoding == DuplexEncoding.Text
            ? TryReadText(ref buffer, fromServer, maxPayload, isFinalBlock, out frame, out error)
            : TryReadBinary(ref buffer, fromServer, maxPayload, isFinalBlock, out frame, out error);

    private static DuplexFrameReadStatus TryReadBinary(
        ref ReadOnlySequence<byte> buffer, bool fromServer, int maxPayload, bool isFinalBlock, out DuplexFrame frame, out string? error)
    {
        frame = default;
        error = null;
        if (buffer.Length < DuplexWire.BinaryHeaderSize)
        {
            if (isFinalBlock && !buffer.IsEmpty)
            {
                error = $"a frame header was cut short: {buffer.Length} of {DuplexWire.BinaryHeaderSize} bytes";
                return DuplexFrameReadStatus.Malformed;
            }

            return DuplexFrameReadStatus.NeedMoreData;
        }

        Span<byte> header = stackalloc byte[DuplexWire.BinaryHeaderSize];
        buffer.Slice(0, DuplexWire.BinaryHeaderSize).CopyTo(header);
        var kind = (DuplexFrameKind)header[0];
        var sequence = BinaryPrimitives.ReadUInt64BigEndian(header[1..]);
        var length = BinaryPrimitives.ReadUInt32BigEndian(header[9..]);

        if (kind != DuplexFrameKind.Message && !(fromServer && kind == DuplexFrameKind.Gap))
        {
            error = $"unknown frame kind 0x{header[0]:x2}";
            return DuplexFrameReadStatus.Malformed;
        }

        if (sequence is 0 or > long.MaxValue)
        {
            error = $"sequence number {sequence} is outside 1 to {long.MaxValue}";
            return DuplexFrameReadStatus.Malformed;
        }

        if (kind == DuplexFrameKind.Gap && length != sizeof(ulong))
        {
            error = $"a gap frame's payload must be 8 bytes, not {length}";
            return DuplexFrameReadStatus.Malformed;
        }

        if (length > (uint)maxPayload)
        {
            error = $"a {length}-byte message exceeds the {maxPayload}-byte limit";
            return DuplexFrameReadStatus.TooLarge;
        }

        var total = DuplexWire.BinaryHeaderSize + (long)length;
        if (buffer.Length < total)
        {
            if (isFinalBlock)
            {
                error = $"a frame's payload was cut short: {buffer.Length - DuplexWire.BinaryHeaderSize} of {length} bytes";
                return DuplexFrameReadStatus.Malformed;
            }

            return DuplexFrameReadStatus.NeedMoreData;
        }

        var payload = buffer.Slice(DuplexWire.BinaryHeaderSize, length).ToArray();
        buffer = buffer.Slice(total);
        frame = kind == DuplexFrameKind.Gap
            ? DuplexFrame.ForGap((long)sequence, (long)BinaryPrimitives.ReadUInt64BigEndian(payload))
            : DuplexFrame.ForMessage((long)sequence, DuplexMessage.FromBytes(payload));
        return DuplexFrameReadStatus.Frame;
    }

    private static DuplexFrameReadStatus TryReadText(
        ref ReadOnlySequence<byte> buffer, bool fromServer, int maxPayload, bool isFinalBlock, out DuplexFrame frame, out string? error)
    {
        frame = default;
        error = null;
        var maxLine = (long)maxPayload + TextFrameOverhead;
        while (true)
        {
            var reader = new SequenceReader<byte>(buffer);
            ReadOnlySequence<byte> line;
            if (reader.TryReadTo(out line, (byte)'\n', advancePastDelimiter: true))
            {
                buffer = buffer.Slice(reader.Position);
            }
            else if (isFinalBlock && !buffer.IsEmpty)
            {
                // The last line may come without its newline.
                line = buffer;
                buffer = buffer.Slice(buffer.End);
            }
            else
            {
                if (buffer.Length > maxLine)
                {
                    error = $"a frame longer than {maxLine} bytes exceeds the {maxPayload}-byte message limit";
                    return DuplexFrameReadStatus.TooLarge;
                }

                return DuplexFrameReadStatus.NeedMoreData;
            }

            if (line.Length > maxLine)
            {
                error = $"a frame of {line.Length} bytes exceeds the {maxPayload}-byte message limit";
                return DuplexFrameReadStatus.TooLarge;
            }

            var bytes = line.ToArray().AsMemory().TrimEnd("\r"u8);
            if (bytes.Span.Trim(" \t"u8).IsEmpty)
            {
                continue;
            }

            return ParseTextFrame(bytes, fromServer, maxPayload, out frame, out error);
        }
    }

    private static DuplexFrameReadStatus ParseTextFrame(ReadOnlyMemory<byte> line, bool fromServer, int maxPayload, out DuplexFrame frame, out string? error)
    {
        frame = default;
        long? sequence = null;
        long? missed = null;
        string? type = null;
        ReadOnlyMemory<byte>? data = null;
        if (!System.Text.Unicode.Utf8.IsValid(line.Span))
        {
            // Checked here, where bytes enter, so no peer with a strict decoder is ever sent invalid text.
            error = "the line is not valid UTF-8";
            return DuplexFrameReadStatus.Malformed;
        }

        try
        {
            var reader = new Utf8JsonReader(line.Span);
            if (!reader.Read() || reader.TokenType != JsonTokenType.StartObject)
            {
                error = "a frame must be one JSON object on one line";
                return DuplexFrameReadStatus.Malformed;
            }

            var seen = 0;
            while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
            {
                // Names are compared in place: a frame allocates nothing beyond its payload.
                var name = reader.ValueTextEquals("seq"u8) ? Property.Seq
                    : reader.ValueTextEquals("data"u8) ? Property.Data
                    : reader.ValueTextEquals("type"u8) ? Property.Type
                    : reader.ValueTextEquals("missed"u8) ? Property.Missed
                    : Property.Other;
                reader.Read();
                if (name != Property.Other && (seen & (1 << (int)name)) != 0)
                {
                    // Parsers differ on which duplicate wins, so a frame that has one means different things to different peers.
                    error = $"the member \"{name.ToString().ToLowerInvariant()}\" appears twice";
                    return DuplexFrameReadStatus.Malformed;
                }

                seen |= 1 << (int)name;
                switch (name)
                {
                    case Property.Seq:
                        if (reader.TokenType != JsonTokenType.Number || !reader.TryGetInt64(out var s))
                        {
                            error = "\"seq\" must be an integer";
                            return DuplexFrameReadStatus.Malformed;
                        }

                        sequence = s;
                        break;
                    case Property.Type:
                        if (reader.TokenType != JsonTokenType.String)
                        {
                            error = "\"type\" must be a string";
                            return DuplexFrameReadStatus.Malformed;
                        }

                        type = reader.ValueTextEquals("message"u8) ? "message" : reader.ValueTextEquals("gap"u8) ? "gap" : reader.GetString();
                        break;
                    case Property.Missed:
                        if (reader.TokenType != JsonTokenType.Number || !reader.TryGetInt64(out var m) || m < 1)
                        {
                            error = "\"missed\" must be a positive integer";
                            return DuplexFrameReadStatus.Malformed;
                        }

                        missed = m;
                        break;
                    case Property.Data:
                        var start = (int)reader.TokenStartIndex;
                        reader.Skip();
                        data = line[start..(int)reader.BytesConsumed];
                        break;
                    default:
                        reader.Skip();
                        break;
                }
            }

            if (reader.TokenType != JsonTokenType.EndObject || reader.Read())
            {
                error = "a frame must be one JSON object on one line";
                return DuplexFrameReadStatus.Malformed;
            }
        }
        catch (JsonException ex)
        {
            error = $"the line is not valid JSON ({ex.Message})";
            return DuplexFrameReadStatus.Malformed;
        }

        if (sequence is not { } seq)
        {
            error = "a frame needs a \"seq\"";
            return DuplexFrameReadStatus.Malformed;
        }

        if (seq < 1)
        {
            error = $"sequence number {seq} is below 1";
            return DuplexFrameReadStatus.Malformed;
        }

        if (type == "gap" && fromServer)
        {
            if (missed is not { } count)
            {
                error = "a gap frame needs \"missed\"";
                return DuplexFrameReadStatus.Malformed;
            }

            frame = DuplexFrame.ForGap(seq, count);
            error = null;
            return DuplexFrameReadStatus.Frame;
        }

        if (type is not (null or "message"))
        {
            error = $"unknown frame type \"{type}\"";
            return DuplexFrameReadStatus.Malformed;
        }

        if (data is not { } payload)
        {
            error = "a message frame needs \"data\"";
            return DuplexFrameReadStatus.Malformed;
        }

        if (payload.Length > maxPayload)
        {
            error = $"a {payload.Length}-byte message exceeds the {maxPayload}-byte limit";
            return DuplexFrameReadStatus.TooLarge;
        }

        frame = DuplexFrame.ForMessage(seq, DuplexMessage.FromValidatedJson(payload));
        error = null;
        return DuplexFrameReadStatus.Frame;
    }

    private enum Property
    {
        Other,
        Seq,
        Data,
        Type,
        Missed,
    }
}
