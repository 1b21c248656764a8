using System.Text;
using System.Text.Json;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// One message's payload, immutable and shareable: a server broadcasting a message creates it once and queues the same
/// instance, and the same bytes, to every session.
/// </summary>
/// <remarks>
/// Text sessions carry JSON values only, so a payload is either known to be one JSON value (<see cref="IsJson"/>) or
/// raw bytes for binary sessions. JSON is checked once, when the message is created.
/// </remarks>
public sealed class DuplexMessage
{
    private DuplexMessage(ReadOnlyMemory<byte> payload, bool isJson)
    {
        Payload = payload;
        IsJson = isJson;
    }

    /// <summary>
    /// Gets the payload bytes. For a JSON message, one UTF-8 JSON value on one line: no carriage return or line feed,
    /// so it can never break a text frame.
    /// </summary>
    public ReadOnlyMemory<byte> Payload { get; }

    /// <summary>Gets whether the payload is one JSON value, and so can travel on a text session.</summary>
    public bool IsJson { get; }

    /// <summary>Serializes <paramref name="value"/> to JSON once, on one line even if the options indent.</summary>
    /// <typeparam name="T">The value's type.</typeparam>
    /// <param name="value">The value.</param>
    /// <param name="options">Serializer options, if not the defaults.</param>
    /// <returns>A JSON message.</returns>
    public static DuplexMessage FromJson<T>(T value, JsonSerializerOptions? options = null) =>
        FromValidatedJson(JsonSerializer.SerializeToUtf8Bytes(value, options));

    /// <summary>
    /// Wraps bytes that must hold exactly one JSON value in valid UTF-8; they are checked here, once. Line breaks between
    /// tokens are removed (into a copy), so the value travels on one line.
    /// </summary>
    /// <param name="utf8Json">The JSON bytes. The message keeps them; do not change them afterwards.</param>
    /// <returns>A JSON message.</returns>
    /// <exception cref="ArgumentException">The bytes are not valid UTF-8, or not exactly one JSON value.</exception>
    public static DuplexMessage FromJsonUtf8(ReadOnlyMemory<byte> utf8Json)
    {
        if (!System.Text.Unicode.Utf8.IsValid(utf8Json.Span))
        {
            throw new ArgumentException("The payload is not valid UTF-8.", nameof(utf8Json));
        }

        if (!IsSingleJsonValue(utf8Json.Span, out var error))
        {
            throw new ArgumentException($"The payload is not one JSON value: {error}", nameof(utf8Json));
        }

        return FromValidatedJson(utf8Json);
    }

    /// <summary>Wraps <paramref name="text"/> as a JSON string value.</summary>
    /// <param name="text">The text.</param>
    /// <returns>A JSON message whose payload is the string.</returns>
    public static DuplexMessage FromText(string text) => FromJson(text);

    /// <summary>Wraps raw bytes, for binary sessions only.</summary>
    /// <param name="bytes">The payload. The message keeps it; do not change it afterwards.</param>
    /// <returns>A binary message.</returns>
    public static DuplexMessage FromBytes(ReadOnlyMemory<byte> bytes) => new(bytes, isJson: false);

    /// <summary>Deserializes a JSON payload.</summary>
    /// <typeparam name="T">The type to read.</typeparam>
    /// <param name="options">Serializer options, if not the defaults.</param>
    /// <returns>The value.</returns>
    public T? Deserialize<T>(JsonSerializerOptions? options = null) => JsonSerializer.Deserialize<T>(Payload.Span, options);

    /// <summary>Shows a JSON payload as its text, or a binary one as its length.</summary>
    /// <returns>A short description.</returns>
    public override string ToString() => IsJson ? Encoding.UTF8.GetString(Payload.Span) : $"{Payload.Length} bytes";

    /// <summary>
    /// Wraps bytes already checked to be one JSON value in valid UTF-8, taking out any line breaks: every JSON message
    /// is made here, so none can split a text frame, whatever encoding or client it came from.
    /// </summary>
    internal static DuplexMessage FromValidatedJson(ReadOnlyMemory<byte> utf8Json) =>
        new(HasLineBreak(utf8Json.Span) ? Compact(utf8Json.Span) : utf8Json, isJson: true);

    internal static bool HasLineBreak(ReadOnlySpan<byte> utf8Json) => utf8Json.IndexOfAny((byte)'\n', (byte)'\r') >= 0;

    /// <summary>
    /// Drops the whitespace between tokens of valid JSON. Raw control characters cannot occur inside JSON strings, so
    /// outside strings is the only place a line break can be; the result is never longer than the input.
    /// </summary>
    internal static byte[] Compact(ReadOnlySpan<byte> utf8Json)
    {
        var output = new byte[utf8Json.Length];
        var written = 0;
        var inString = false;
        var escaped = false;
        foreach (var b in utf8Json)
        {
            if (inString)
            {
                inString = escaped || b != (byte)'"';
                escaped = !escaped && b == (byte)'\\';
            }
            else if (b is (byte)' ' or (byte)'\t' or (byte)'\n' or (byte)'\r')
            {
                continue;
            }
            else
            {
                inString = b == (byte)'"';
            }

            output[written++] = b;
        }

        return output.AsSpan(0, written).ToArray();
    }

    internal static bool IsSingleJsonValue(ReadOnlySpan<byte> utf8Json, out string? error)
    {
        try
        {
            var reader = new Utf8JsonReader(utf8Json, new JsonReaderOptions { CommentHandling = JsonCommentHandling.Disallow });
            if (!reader.Read())
            {
                error = "it is empty";
                return false;
            }

            reader.Skip();
            if (reader.Read())
            {
                error = "it holds more than one value";
                return false;
            }

            error = null;
            return true;
        }
        catch (JsonException ex)
        {
            error = ex.Message;
            return false;
        }
    }
}
