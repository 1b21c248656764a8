using System.Buffers.Text;
using System.Diagnostics;
using System.Text.Json;

namespace ChannelPool.Perf.Clients;

/// <summary>
/// What a scenario publishes: <c>{"k":key,"b":burst,"t":timestamp}</c>. The timestamp is <see cref="Stopwatch.GetTimestamp"/>
/// when it was published; publisher and receivers share this process, so receipt minus it is the delivery latency.
/// </summary>
internal readonly record struct Stamp(int Key, int Burst, long Timestamp)
{
    public static Stamp Now(int key, int burst) => new(key, burst, Stopwatch.GetTimestamp());

    public byte[] ToJson()
    {
        Span<byte> buffer = stackalloc byte[96];
        var written = 0;
        Append(buffer, ref written, "{\"k\":"u8);
        Utf8Formatter.TryFormat(Key, buffer[written..], out var n);
        written += n;
        Append(buffer, ref written, ",\"b\":"u8);
        Utf8Formatter.TryFormat(Burst, buffer[written..], out n);
        written += n;
        Append(buffer, ref written, ",\"t\":"u8);
        Utf8Formatter.TryFormat(Timestamp, buffer[written..], out n);
        written += n;
        Append(buffer, ref written, "}"u8);
        return buffer[..written].ToArray();
    }

    /// <summary>Reads a stamp back; false for anything else (which a scenario counts as corrupt).</summary>
    public static bool TryParse(ReadOnlySpan<byte> json, out Stamp stamp)
    {
        stamp = default;
        int key = -1, burst = -1;
        long timestamp = -1;
        try
        {
            var reader = new Utf8JsonReader(json);
            if (!reader.Read() || reader.TokenType != JsonTokenType.StartObject)
            {
                return false;
            }

            while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
            {
                if (reader.ValueTextEquals("k"u8) && reader.Read())
                {
                    key = reader.GetInt32();
                }
                else if (reader.ValueTextEquals("b"u8) && reader.Read())
                {
                    burst = reader.GetInt32();
                }
                else if (reader.ValueTextEquals("t"u8) && reader.Read())
                {
                    timestamp = reader.GetInt64();
                }
                else
                {
                    reader.Read();
                    reader.Skip();
                }
            }
        }
        catch (Exception ex) when (ex is JsonException or FormatException or InvalidOperationException)
        {
            return false;
        }

        if (key < 0 || burst < 0 || timestamp < 0)
        {
            return false;
        }

        stamp = new Stamp(key, burst, timestamp);
        return true;
    }

    private static void Append(Span<byte> buffer, ref int written, ReadOnlySpan<byte> text)
    {
        text.CopyTo(buffer[written..]);
        written += text.Length;
    }
}
