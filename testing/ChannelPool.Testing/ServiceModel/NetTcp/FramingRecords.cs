using System.Text;

namespace ChannelPool.Testing.ServiceModel.NetTcp;

/// <summary>The [MC-NMF] record types, modes, encodings and fault strings the host understands.</summary>
internal static class FramingRecords
{
    public const byte Version = 0x00;
    public const byte Mode = 0x01;
    public const byte Via = 0x02;
    public const byte KnownEncoding = 0x03;
    public const byte ExtensibleEncoding = 0x04;
    public const byte SizedEnvelope = 0x06;
    public const byte End = 0x07;
    public const byte Fault = 0x08;
    public const byte UpgradeRequest = 0x09;
    public const byte UpgradeResponse = 0x0A;
    public const byte PreambleAck = 0x0B;
    public const byte PreambleEnd = 0x0C;

    public const byte MajorVersion = 1;
    public const byte MinorVersion = 0;
    public const byte DuplexMode = 0x02;
    public const byte BinarySessionEncoding = 0x08;
    public const string TlsUpgrade = "application/ssl-tls";

    private const string FaultBase = "http://schemas.microsoft.com/ws/2006/05/framing/faults/";
    public const string ContentTypeInvalidFault = FaultBase + "ContentTypeInvalid";
    public const string EndpointNotFoundFault = FaultBase + "EndpointNotFound";
    public const string MaxMessageSizeExceededFault = FaultBase + "MaxMessageSizeExceededFault";
    public const string UnsupportedModeFault = FaultBase + "UnsupportedMode";
    public const string UnsupportedVersionFault = FaultBase + "UnsupportedVersion";
    public const string UpgradeInvalidFault = FaultBase + "UpgradeInvalid";
    public const string ViaTooLongFault = FaultBase + "ViaTooLong";

    /// <summary>The most bytes a record's type and size take: one for the type, at most five for the size.</summary>
    public const int MaxRecordHeaderBytes = 6;

    /// <summary>Encodes a record made of its type, a variable-length size and the payload.</summary>
    public static byte[] Sized(byte recordType, ReadOnlySpan<byte> payload)
    {
        var record = new byte[1 + SizeOfInt(payload.Length) + payload.Length];
        record[0] = recordType;
        int offset = 1 + WriteInt(record.AsSpan(1), payload.Length);
        payload.CopyTo(record.AsSpan(offset));
        return record;
    }

    /// <summary>
    /// Writes a record's type and size into the bytes just before its payload, which the encoder left free
    /// (<see cref="MaxRecordHeaderBytes"/> of them), so the record goes out in one write with no copy, as WCF's
    /// framing does (<c>SessionEncoder.EncodeMessageFrame</c> over a message encoded at an offset).
    /// </summary>
    /// <param name="recordType">The record type.</param>
    /// <param name="payload">The payload, at least <see cref="MaxRecordHeaderBytes"/> bytes into its array.</param>
    /// <returns>The whole record: header and payload.</returns>
    public static ArraySegment<byte> FrameInPlace(byte recordType, ArraySegment<byte> payload)
    {
        int headerBytes = 1 + SizeOfInt(payload.Count);
        int start = payload.Offset - headerBytes;
        payload.Array![start] = recordType;
        WriteInt(payload.Array.AsSpan(start + 1), payload.Count);
        return new ArraySegment<byte>(payload.Array, start, headerBytes + payload.Count);
    }

    /// <summary>Encodes a fault record carrying one of the spec's fault strings.</summary>
    public static byte[] FaultRecord(string fault) => Sized(Fault, Encoding.UTF8.GetBytes(fault));

    private static int SizeOfInt(int value)
    {
        int size = 1;
        for (uint rest = (uint)value >> 7; rest != 0; rest >>= 7)
        {
            size++;
        }

        return size;
    }

    // [MC-NMF] 2.2.2: seven bits a byte, least significant group first, high bit set while more bytes follow.
    private static int WriteInt(Span<byte> destination, int value)
    {
        uint rest = (uint)value;
        int written = 0;
        while (rest >= 0x80)
        {
            destination[written++] = (byte)(rest | 0x80);
            rest >>= 7;
        }

        destination[written++] = (byte)rest;
        return written;
    }
}

/// <summary>Reads [MC-NMF] records from a stream through a small buffer.</summary>
/// <param name="stream">The connection's stream: the socket before the upgrade, the TLS stream after it.</param>
internal sealed class FramingReader(Stream stream)
{
    private readonly byte[] _buffer = new byte[4096];
    private int _offset;
    private int _count;

    /// <summary>Gets a value indicating whether bytes were read from the stream and not yet consumed.</summary>
    public bool HasBufferedBytes => _count > 0;

    /// <summary>Reads one byte, or returns -1 at a clean end of stream before any byte of a record.</summary>
    public async ValueTask<int> TryReadByteAsync(CancellationToken cancellationToken)
    {
        if (_count == 0 && !await FillAsync(cancellationToken).ConfigureAwait(false))
        {
            return -1;
        }

        _count--;
        return _buffer[_offset++];
    }

    /// <summary>Reads one byte; the end of the stream here is a protocol error.</summary>
    public async ValueTask<byte> ReadByteAsync(CancellationToken cancellationToken)
    {
        int value = await TryReadByteAsync(cancellationToken).ConfigureAwait(false);
        return value >= 0 ? (byte)value : throw new EndOfStreamException("The connection ended inside a framing record.");
    }

    /// <summary>Reads a variable-length size (at most five bytes, at most <see cref="int.MaxValue"/>).</summary>
    public async ValueTask<int> ReadSizeAsync(CancellationToken cancellationToken)
    {
        uint value = 0;
        for (int shift = 0; shift < 35; shift += 7)
        {
            byte next = await ReadByteAsync(cancellationToken).ConfigureAwait(false);
            value |= (uint)(next & 0x7F) << shift;
            if ((next & 0x80) == 0)
            {
                return value <= int.MaxValue ? (int)value : throw new InvalidDataException("A framing size is larger than int.MaxValue.");
            }
        }

        throw new InvalidDataException("A framing size is longer than five bytes.");
    }

    /// <summary>Reads exactly <paramref name="count"/> bytes into a new array.</summary>
    public async ValueTask<byte[]> ReadBytesAsync(int count, CancellationToken cancellationToken)
    {
        var result = new byte[count];
        await ReadExactlyAsync(result, count, cancellationToken).ConfigureAwait(false);
        return result;
    }

    /// <summary>Reads exactly <paramref name="count"/> bytes into the start of <paramref name="result"/>.</summary>
    public async ValueTask ReadExactlyAsync(byte[] result, int count, CancellationToken cancellationToken)
    {
        int copied = 0;
        while (copied < count)
        {
            if (_count == 0 && !await FillAsync(cancellationToken).ConfigureAwait(false))
            {
                throw new EndOfStreamException("The connection ended inside a framing record.");
            }

            int chunk = Math.Min(_count, count - copied);
            _buffer.AsSpan(_offset, chunk).CopyTo(result.AsSpan(copied));
            _offset += chunk;
            _count -= chunk;
            copied += chunk;
        }
    }

    /// <summary>Reads a size-prefixed UTF-8 string no longer than <paramref name="maxBytes"/>.</summary>
    /// <returns>The string, or <see langword="null"/> when it is longer than allowed.</returns>
    public async ValueTask<string?> ReadStringAsync(int maxBytes, CancellationToken cancellationToken)
    {
        int size = await ReadSizeAsync(cancellationToken).ConfigureAwait(false);
        if (size > maxBytes)
        {
            return null;
        }

        return Encoding.UTF8.GetString(await ReadBytesAsync(size, cancellationToken).ConfigureAwait(false));
    }

    private async ValueTask<bool> FillAsync(CancellationToken cancellationToken)
    {
        _offset = 0;
        _count = await stream.ReadAsync(_buffer, cancellationToken).ConfigureAwait(false);
        return _count > 0;
    }
}

/// <summary>Writes [MC-NMF] records; one write per record, so a record never interleaves with another.</summary>
internal static class FramingWriter
{
    private static readonly byte[] UpgradeResponse = [FramingRecords.UpgradeResponse];
    private static readonly byte[] PreambleAck = [FramingRecords.PreambleAck];
    private static readonly byte[] End = [FramingRecords.End];

    public static ValueTask WriteUpgradeResponseAsync(Stream stream, CancellationToken cancellationToken) => WriteFlushedAsync(stream, UpgradeResponse, cancellationToken);

    public static ValueTask WritePreambleAckAsync(Stream stream, CancellationToken cancellationToken) => WriteFlushedAsync(stream, PreambleAck, cancellationToken);

    public static ValueTask WriteEndAsync(Stream stream, CancellationToken cancellationToken) => WriteFlushedAsync(stream, End, cancellationToken);

    public static ValueTask WriteFaultAsync(Stream stream, string fault, CancellationToken cancellationToken) => WriteFlushedAsync(stream, FramingRecords.FaultRecord(fault), cancellationToken);

    /// <summary>
    /// Writes a sized envelope record around a message encoded <see cref="FramingRecords.MaxRecordHeaderBytes"/> into its
    /// buffer: one write (one TLS record, one send) and no flush, which on a TLS stream over a socket has nothing to do.
    /// </summary>
    public static ValueTask WriteSizedEnvelopeAsync(Stream stream, ArraySegment<byte> message, CancellationToken cancellationToken) =>
        stream.WriteAsync(FramingRecords.FrameInPlace(FramingRecords.SizedEnvelope, message), cancellationToken);

    private static async ValueTask WriteFlushedAsync(Stream stream, byte[] record, CancellationToken cancellationToken)
    {
        await stream.WriteAsync(record, cancellationToken).ConfigureAwait(false);
        await stream.FlushAsync(cancellationToken).ConfigureAwait(false);
    }
}
