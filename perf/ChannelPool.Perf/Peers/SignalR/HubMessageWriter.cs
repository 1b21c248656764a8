using System.Buffers;
using System.Globalization;
using System.Text.Json;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>Writes the JSON hub protocol messages a pub/sub client sends, each ended by the record separator.</summary>
internal static class HubMessageWriter
{
    // One writer per thread, reset onto each message: writing is synchronous, so no two messages share it.
    [ThreadStatic]
    private static Utf8JsonWriter? t_writer;

    /// <summary>Gets the handshake request: the JSON protocol, version 1.</summary>
    public static ReadOnlyMemory<byte> Handshake { get; } = "{\"protocol\":\"json\",\"version\":1}\u001e"u8.ToArray();

    /// <summary>Gets a ping.</summary>
    public static ReadOnlyMemory<byte> Ping { get; } = "{\"type\":6}\u001e"u8.ToArray();

    /// <summary>
    /// Writes a blocking invocation: <c>{"type":1,"invocationId":"7","target":"Publish","arguments":["topic",data]}</c>,
    /// with <paramref name="data"/> copied verbatim.
    /// </summary>
    /// <param name="invocationId">The id the completion will carry.</param>
    /// <param name="target">The hub method.</param>
    /// <param name="topic">The first argument.</param>
    /// <param name="data">The raw JSON of the second argument, or <see langword="null"/> for none.</param>
    /// <returns>The message in a pooled buffer; dispose it once sent.</returns>
    /// <exception cref="ArgumentException"><paramref name="data"/> is not one JSON value.</exception>
    public static OutgoingHubMessage WriteInvocation(long invocationId, string target, string topic, ReadOnlyMemory<byte>? data)
    {
        var message = new OutgoingHubMessage();
        try
        {
            var writer = t_writer ??= new Utf8JsonWriter(message);
            writer.Reset(message);
            Span<byte> id = stackalloc byte[20];
            invocationId.TryFormat(id, out var idLength, provider: CultureInfo.InvariantCulture);
            writer.WriteStartObject();
            writer.WriteNumber("type"u8, 1);
            writer.WriteString("invocationId"u8, id[..idLength]);
            writer.WriteString("target"u8, target);
            writer.WriteStartArray("arguments"u8);
            writer.WriteStringValue(topic);
            if (data is { } json)
            {
                WriteData(writer, json.Span);
            }

            writer.WriteEndArray();
            writer.WriteEndObject();
            writer.Flush();
            message.GetSpan(1)[0] = HubRecordBuffer.RecordSeparator;
            message.Advance(1);
            return message;
        }
        catch
        {
            message.Dispose();
            throw;
        }
    }

    // Validated, because one malformed publish would make the server drop the whole connection.
    private static void WriteData(Utf8JsonWriter writer, ReadOnlySpan<byte> data)
    {
        try
        {
            writer.WriteRawValue(data);
        }
        catch (JsonException ex)
        {
            throw new ArgumentException($"The data to publish is not one JSON value: {ex.Message}", nameof(data), ex);
        }
    }
}

/// <summary>One outgoing message in an array rented from the shared pool.</summary>
internal sealed class OutgoingHubMessage : IBufferWriter<byte>, IDisposable
{
    private byte[] _array = ArrayPool<byte>.Shared.Rent(256);
    private int _length;

    /// <summary>Gets the message written so far.</summary>
    public ReadOnlyMemory<byte> Written => _array.AsMemory(0, _length);

    public void Advance(int count) => _length += count;

    public Memory<byte> GetMemory(int sizeHint = 0)
    {
        Reserve(sizeHint);
        return _array.AsMemory(_length);
    }

    public Span<byte> GetSpan(int sizeHint = 0)
    {
        Reserve(sizeHint);
        return _array.AsSpan(_length);
    }

    public void Dispose()
    {
        var array = _array;
        _array = [];
        _length = 0;
        if (array.Length > 0)
        {
            ArrayPool<byte>.Shared.Return(array);
        }
    }

    private void Reserve(int sizeHint)
    {
        var needed = _length + Math.Max(sizeHint, 1);
        if (needed > _array.Length)
        {
            var larger = ArrayPool<byte>.Shared.Rent(Math.Max(needed, _array.Length * 2));
            _array.AsSpan(0, _length).CopyTo(larger);
            ArrayPool<byte>.Shared.Return(_array);
            _array = larger;
        }
    }
}
