using System.Text.Json;

namespace ChannelPool.PollingDuplex.PubSub;

/// <summary>What a pub/sub command asks for.</summary>
public enum PubSubOperation
{
    /// <summary><c>{"op":"subscribe","topic":"t"}</c>: receive what is published to the topic.</summary>
    Subscribe = 0,

    /// <summary><c>{"op":"unsubscribe","topic":"t"}</c>: stop receiving it.</summary>
    Unsubscribe = 1,

    /// <summary><c>{"op":"publish","topic":"t","data":&lt;any JSON&gt;,"echo":false}</c>: send the data to the topic's subscribers.</summary>
    Publish = 2,
}

/// <summary>
/// One client command of the pub/sub service (see <see cref="PubSubHandler"/>), read from a message's payload. Every
/// store of the pub/sub service reads commands here, so a command means the same, and a bad one is refused with the
/// same reason, wherever the topics live.
/// </summary>
public readonly struct PubSubCommand
{
    private readonly ReadOnlyMemory<byte> _payload;
    private readonly Range _rawTopic;
    private readonly Range _data;

    private PubSubCommand(PubSubOperation operation, string topic, bool echo, ReadOnlyMemory<byte> payload, Range rawTopic, Range data)
    {
        Operation = operation;
        Topic = topic;
        Echo = echo;
        _payload = payload;
        _rawTopic = rawTopic;
        _data = data;
    }

    /// <summary>Gets what the command asks for.</summary>
    public PubSubOperation Operation { get; }

    /// <summary>Gets the topic's name: 1 to <see cref="PubSubHandler.MaxTopicLength"/> characters, valid Unicode, no control characters.</summary>
    public string Topic { get; }

    /// <summary>Gets whether a publish goes to its publisher too, when subscribed.</summary>
    public bool Echo { get; }

    /// <summary>Gets the topic as JSON string content, escaped as the client wrote it, so a notification never re-escapes it longer.</summary>
    internal ReadOnlySpan<byte> EscapedTopic => _payload.Span[_rawTopic][1..^1];

    /// <summary>Gets a publish's data: one JSON value, checked.</summary>
    internal ReadOnlySpan<byte> Data => _payload.Span[_data];

    /// <summary>Reads one client command from <paramref name="message"/>'s payload.</summary>
    /// <param name="message">A client message, in either encoding.</param>
    /// <returns>The command.</returns>
    /// <exception cref="DuplexMessageRejectedException">The payload is not a command; the message says what is wrong with it, for the client.</exception>
    public static PubSubCommand Parse(DuplexMessage message)
    {
        ArgumentNullException.ThrowIfNull(message);
        var payload = message.Payload;
        if (!System.Text.Unicode.Utf8.IsValid(payload.Span))
        {
            throw new DuplexMessageRejectedException("A command must be valid UTF-8.");
        }

        string? op = null;
        string? topic = null;
        Range rawTopic = default;
        Range data = default;
        var seen = new HashSet<string>(StringComparer.Ordinal);
        var hasData = false;
        var echo = false;
        try
        {
            var reader = new Utf8JsonReader(payload.Span);
            if (!reader.Read() || reader.TokenType != JsonTokenType.StartObject)
            {
                throw new DuplexMessageRejectedException("A command must be a JSON object with an \"op\".");
            }

            while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
            {
                var name = reader.GetString()!;
                if (name is "op" or "topic" or "data" or "echo" && !seen.Add(name))
                {
                    throw new DuplexMessageRejectedException($"A command must not repeat \"{name}\".");
                }

                reader.Read();
                switch (name)
                {
                    case "op" when reader.TokenType == JsonTokenType.String:
                        op = reader.GetString();
                        break;
                    case "topic" when reader.TokenType == JsonTokenType.String:
                        topic = reader.GetString();
                        rawTopic = (int)reader.TokenStartIndex..(int)reader.BytesConsumed;
                        break;
                    case "echo" when reader.TokenType is JsonTokenType.True or JsonTokenType.False:
                        echo = reader.GetBoolean();
                        break;
                    case "echo":
                        throw new DuplexMessageRejectedException("\"echo\" must be true or false.");
                    case "data":
                        var start = (int)reader.TokenStartIndex;
                        reader.Skip();
                        data = start..(int)reader.BytesConsumed;
                        hasData = true;
                        break;
                    default:
                        reader.Skip();
                        break;
                }
            }
        }
        catch (JsonException ex)
        {
            throw new DuplexMessageRejectedException($"A command must be a JSON object: {ex.Message}", ex);
        }
        catch (InvalidOperationException ex)
        {
            // A string escape the reader cannot turn into text, such as an unpaired surrogate (\ud800).
            throw new DuplexMessageRejectedException($"A command's strings must be valid Unicode text: {ex.Message}", ex);
        }

        PubSubOperation operation = op switch
        {
            "subscribe" => PubSubOperation.Subscribe,
            "unsubscribe" => PubSubOperation.Unsubscribe,
            "publish" => PubSubOperation.Publish,
            _ => throw new DuplexMessageRejectedException($"Unknown op \"{op}\"; use subscribe, unsubscribe or publish."),
        };

        if (topic is null)
        {
            throw new DuplexMessageRejectedException($"A {op} needs a \"topic\": a string of 1 to {PubSubHandler.MaxTopicLength} characters.");
        }

        if (PubSubTopicName.Check(topic) is { } problem)
        {
            throw new DuplexMessageRejectedException($"A {op} needs a valid \"topic\". {problem}");
        }

        if (operation == PubSubOperation.Publish && !hasData)
        {
            throw new DuplexMessageRejectedException("A publish needs \"data\".");
        }

        return new PubSubCommand(operation, topic, echo, payload, rawTopic, data);
    }

    /// <summary>
    /// Creates the notification a publish sends to the topic's subscribers, <c>{"topic":"t","data":&lt;the data&gt;}</c>:
    /// serialized once, the same bytes for every subscriber in either encoding.
    /// </summary>
    /// <param name="maxMessageSize">The endpoint's <see cref="PollingDuplexOptions.MaxMessageSize"/>.</param>
    /// <returns>The notification.</returns>
    /// <exception cref="InvalidOperationException">The command is not a publish.</exception>
    /// <exception cref="DuplexMessageRejectedException">The notification would exceed <paramref name="maxMessageSize"/>; the message says so, for the client.</exception>
    public DuplexMessage CreateNotification(int maxMessageSize)
    {
        if (Operation != PubSubOperation.Publish)
        {
            throw new InvalidOperationException($"Only a publish has a notification; this command is a {Operation}.");
        }

        return PubSubNotification.Create(Topic, EscapedTopic, Data, maxMessageSize, fromClient: true);
    }
}
