using System.Buffers.Text;
using System.Text.Json;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>The message types of the SignalR hub protocol that a pub/sub client meets.</summary>
internal enum HubMessageType
{
    /// <summary>No <c>type</c> property: the handshake response.</summary>
    None = 0,

    /// <summary>A method call; from the server, a notification.</summary>
    Invocation = 1,

    /// <summary>The result of one of our invocations, or its error.</summary>
    Completion = 3,

    /// <summary>A keep-alive.</summary>
    Ping = 6,

    /// <summary>The server is closing the connection, maybe with an error.</summary>
    Close = 7,
}

/// <summary>
/// The fields of one JSON hub protocol message that the pub/sub client acts on. It points into the received record
/// instead of copying, so a notification's data reaches the application without an allocation.
/// </summary>
internal readonly ref struct HubMessage
{
    private HubMessage(HubMessageType type, long invocationId, bool isNotification, ReadOnlySpan<byte> notificationData, string? error)
    {
        Type = type;
        InvocationId = invocationId;
        IsNotification = isNotification;
        NotificationData = notificationData;
        Error = error;
    }

    /// <summary>Gets the message type; types the client does not act on keep their number.</summary>
    public HubMessageType Type { get; }

    /// <summary>Gets the invocation id of a completion, or -1 if it is missing or not one of ours (we send decimal numbers).</summary>
    public long InvocationId { get; }

    /// <summary>Gets whether this is an invocation of the <c>notify</c> client method with a data argument.</summary>
    public bool IsNotification { get; }

    /// <summary>Gets the raw JSON of a notification's data argument (the second), exactly as the server wrote it.</summary>
    public ReadOnlySpan<byte> NotificationData { get; }

    /// <summary>Gets the error of a completion, a close or the handshake response, if any.</summary>
    public string? Error { get; }

    /// <summary>Reads one record. Properties may come in any order, and unknown ones are skipped.</summary>
    /// <param name="record">The record, without its separator.</param>
    /// <returns>The fields.</returns>
    /// <exception cref="InvalidDataException">The record is not a JSON object.</exception>
    public static HubMessage Parse(ReadOnlySpan<byte> record)
    {
        try
        {
            return ParseObject(record);
        }
        catch (JsonException ex)
        {
            throw new InvalidDataException($"The server sent a message that is not valid JSON: {ex.Message}", ex);
        }
    }

    private static HubMessage ParseObject(ReadOnlySpan<byte> record)
    {
        var reader = new Utf8JsonReader(record);
        if (!reader.Read() || reader.TokenType != JsonTokenType.StartObject)
        {
            throw new InvalidDataException("The server sent a message that is not a JSON object.");
        }

        var type = HubMessageType.None;
        var invocationId = -1L;
        var isNotify = false;
        ReadOnlySpan<byte> data = default;
        var hasData = false;
        string? error = null;
        while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
        {
            if (reader.ValueTextEquals("type"u8))
            {
                reader.Read();
                type = (HubMessageType)reader.GetInt32();
            }
            else if (reader.ValueTextEquals("invocationId"u8))
            {
                reader.Read();
                if (reader.TokenType == JsonTokenType.String && !reader.ValueIsEscaped
                    && Utf8Parser.TryParse(reader.ValueSpan, out long id, out var consumed) && consumed == reader.ValueSpan.Length)
                {
                    invocationId = id;
                }
            }
            else if (reader.ValueTextEquals("target"u8))
            {
                reader.Read();
                isNotify = reader.TokenType == JsonTokenType.String && reader.ValueTextEquals(SignalRPubSubHub.NotifyMethod);
            }
            else if (reader.ValueTextEquals("arguments"u8))
            {
                reader.Read();
                hasData = TryReadSecondArgument(ref reader, out var start, out var end);
                data = hasData ? record[start..end] : default;
            }
            else if (reader.ValueTextEquals("error"u8))
            {
                reader.Read();
                error = reader.TokenType == JsonTokenType.String ? reader.GetString() : null;
            }
            else
            {
                reader.Read();
                reader.Skip();
            }
        }

        return new HubMessage(type, invocationId, type == HubMessageType.Invocation && isNotify && hasData, data, error);
    }

    // notify(topic, data): the data is the second argument. Its bytes are sliced from the record, not re-serialized.
    private static bool TryReadSecondArgument(ref Utf8JsonReader reader, out int start, out int end)
    {
        start = end = 0;
        if (reader.TokenType != JsonTokenType.StartArray)
        {
            reader.Skip();
            return false;
        }

        var found = false;
        for (var index = 0; reader.Read() && reader.TokenType != JsonTokenType.EndArray; index++)
        {
            var tokenStart = (int)reader.TokenStartIndex;
            reader.Skip();
            if (index == 1)
            {
                start = tokenStart;
                end = (int)reader.BytesConsumed;
                found = true;
            }
        }

        return found;
    }
}
