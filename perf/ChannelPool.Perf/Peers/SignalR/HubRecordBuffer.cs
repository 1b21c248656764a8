using System.Buffers;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>
/// Bytes received from the server, cut into records at the 0x1E separator that ends every JSON hub protocol message. A
/// record may arrive over several reads and one read may hold several records. The array is rented when bytes come and
/// returned once every whole record is taken, so thousands of idle clients hold no buffers.
/// </summary>
internal sealed class HubRecordBuffer
{
    /// <summary>The byte that ends every message of the JSON hub protocol.</summary>
    public const byte RecordSeparator = 0x1E;

    /// <summary>The largest record taken; a server that sends more without a separator is broken.</summary>
    public const int MaxRecordBytes = 4 * 1024 * 1024;

    private const int InitialSize = 4096;
    private const int MinimumReadSize = 1024;

    private byte[]? _array;
    private int _start;
    private int _end;

    // How many bytes after _start are known to hold no separator, so a record arriving in many reads is scanned once.
    private int _scanned;

    /// <summary>Gets memory to read into; call <see cref="Advance"/> with the count read.</summary>
    /// <returns>At least 1 KiB of free space after the bytes held.</returns>
    /// <exception cref="InvalidDataException">A record grew past <see cref="MaxRecordBytes"/>.</exception>
    public Memory<byte> GetReadMemory()
    {
        if (_array is null)
        {
            _array = ArrayPool<byte>.Shared.Rent(InitialSize);
        }
        else if (_array.Length - _end < MinimumReadSize)
        {
            var held = _end - _start;
            if (held > MaxRecordBytes)
            {
                throw new InvalidDataException($"The server sent {held} bytes without a record separator; the limit is {MaxRecordBytes}.");
            }

            var target = held + MinimumReadSize <= _array.Length ? _array : ArrayPool<byte>.Shared.Rent(Math.Max(_array.Length * 2, held + MinimumReadSize));
            _array.AsSpan(_start, held).CopyTo(target);
            if (!ReferenceEquals(target, _array))
            {
                ArrayPool<byte>.Shared.Return(_array);
                _array = target;
            }

            _start = 0;
            _end = held;
        }

        return _array.AsMemory(_end);
    }

    /// <summary>Records that <paramref name="count"/> bytes were read into the memory from <see cref="GetReadMemory"/>.</summary>
    /// <param name="count">The bytes read.</param>
    public void Advance(int count) => _end += count;

    /// <summary>Takes the next whole record, without its separator. The span is valid until the next call on this buffer.</summary>
    /// <param name="record">The record.</param>
    /// <returns><see langword="true"/> if a whole record was held.</returns>
    public bool TryTake(out ReadOnlySpan<byte> record)
    {
        var unscanned = _array.AsSpan(_start + _scanned, _end - _start - _scanned);
        var separator = unscanned.IndexOf(RecordSeparator);
        if (separator < 0)
        {
            _scanned = _end - _start;
            record = default;
            return false;
        }

        var length = _scanned + separator;
        record = _array.AsSpan(_start, length);
        _start += length + 1;
        _scanned = 0;
        return true;
    }

    /// <summary>Returns the array to the pool if no part of a record is held.</summary>
    public void ReleaseIfEmpty()
    {
        if (_start == _end)
        {
            Release();
        }
    }

    /// <summary>Returns the array to the pool, dropping any part of a record held.</summary>
    public void Release()
    {
        if (_array is not null)
        {
            ArrayPool<byte>.Shared.Return(_array);
            _array = null;
        }

        _start = _end = _scanned = 0;
    }
}
