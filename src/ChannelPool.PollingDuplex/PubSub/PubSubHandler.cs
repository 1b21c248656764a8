using System.Buffers;
using System.Collections.Concurrent;
using System.Text.Json;

namespace ChannelPool.PollingDuplex.PubSub;

/// <summary>
/// The pub/sub reference service. Clients send JSON commands; a published message is serialized once, and the same
/// bytes are queued to every subscriber, none of which can hold up another.
/// </summary>
/// <remarks>
/// Commands (each the payload of one client message, in either encoding):
/// <c>{"op":"subscribe","topic":"t"}</c>, <c>{"op":"unsubscribe","topic":"t"}</c>, and
/// <c>{"op":"publish","topic":"t","data":&lt;any JSON&gt;,"echo":false}</c>. Subscribers receive
/// <c>{"topic":"t","data":&lt;the data&gt;}</c>; the publisher too only when <c>echo</c> is true. It serves both of the
/// original's patterns: broadcast (one topic, many subscribers) and collaboration (many small topics whose members
/// publish to each other).
/// </remarks>
public sealed class PubSubHandler : PollingDuplexHandler
{
    /// <summary>The longest topic name, in characters.</summary>
    public const int MaxTopicLength = 256;

    private static readonly object SubscriptionsKey = new();
    private readonly ConcurrentDictionary<string, Topic> _topics = new(StringComparer.Ordinal);

    /// <summary>Gets the number of subscribers of <paramref name="topic"/>.</summary>
    /// <param name="topic">The topic.</param>
    /// <returns>How many sessions are subscribed.</returns>
    public int SubscriberCount(string topic) => _topics.TryGetValue(topic, out var t) ? t.Count : 0;

    /// <summary>Publishes <paramref name="data"/> to <paramref name="topic"/> from the server side.</summary>
    /// <param name="topic">The topic.</param>
    /// <param name="data">One UTF-8 JSON value.</param>
    /// <returns>How many subscribers it was queued for.</returns>
    /// <exception cref="ArgumentException">The notification would exceed the endpoint's MaxMessageSize.</exception>
    public int Publish(string topic, ReadOnlySpan<byte> data) => Fanout(topic, data, except: null);

    /// <inheritdoc />
    public override ValueTask OnMessageAsync(DuplexSession session, DuplexMessage message, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(session);
        ArgumentNullException.ThrowIfNull(message);
        var command = Parse(message.Payload);
        switch (command.Op)
        {
            case "subscribe":
                Subscribe(session, command.Topic);
                break;
            case "unsubscribe":
                Unsubscribe(session, command.Topic);
                break;
            case "publish":
                Fanout(command.Topic, message.Payload.Span[command.Data], command.Echo ? null : session);
                break;
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    public override ValueTask OnSessionEndedAsync(DuplexSession session, DuplexSessionEndReason reason)
    {
        ArgumentNullException.ThrowIfNull(session);
        if (session.Items.TryGetValue(SubscriptionsKey, out var value) && value is HashSet<string> topics)
        {
            string[] subscribed;
            lock (topics)
            {
                subscribed = [.. topics];
                topics.Clear();
            }

            foreach (var topic in subscribed)
            {
                if (_topics.TryGetValue(topic, out var t))
                {
                    t.Remove(session);
                }
            }
        }

        return ValueTask.CompletedTask;
    }

    private int Fanout(string topic, ReadOnlySpan<byte> data, DuplexSession? except)
    {
        if (!_topics.TryGetValue(topic, out var t))
        {
            return 0;
        }

        // Serialized once: every subscriber's frame carries these same bytes.
        var payload = new ArrayBufferWriter<byte>(data.Length + topic.Length + 32);
        using (var json = new Utf8JsonWriter(payload))
        {
            json.WriteStartObject();
            json.WriteString("topic", topic);
            json.WritePropertyName("data");
            json.WriteRawValue(data, skipInputValidation: true);
            json.WriteEndObject();
        }

        var subscribers = t.Subscribers;
        var limit = (except ?? subscribers.FirstOrDefault())?.MaxMessageSize ?? int.MaxValue;
        if (payload.WrittenCount > limit)
        {
            // Only a server-side publish can get here: a client's publish command is always longer than its notification.
            throw new ArgumentException(
                $"Published to \"{topic}\", the notification would be {payload.WrittenCount} bytes, over the endpoint's {limit}-byte MaxMessageSize.",
                nameof(data));
        }

        var message = DuplexMessage.FromValidatedJson(payload.WrittenMemory);
        var queued = 0;
        foreach (var subscriber in subscribers)
        {
            if (subscriber != except && subscriber.Send(message) == DuplexSendResult.Queued)
            {
                queued++;
            }
        }

        return queued;
    }

    private void Subscribe(DuplexSession session, string topic)
    {
        var topics = (HashSet<string>)session.Items.GetOrAdd(SubscriptionsKey, static _ => new HashSet<string>(StringComparer.Ordinal))!;
        lock (topics)
        {
            if (!topics.Add(topic))
            {
                return;
            }
        }

        _topics.GetOrAdd(topic, static _ => new Topic()).Add(session);

        // A session that ended meanwhile must not linger as a subscriber.
        if (session.EndReason is not null)
        {
            Unsubscribe(session, topic);
        }
    }

    private void Unsubscribe(DuplexSession session, string topic)
    {
        if (session.Items.TryGetValue(SubscriptionsKey, out var value) && value is HashSet<string> topics)
        {
            lock (topics)
            {
                topics.Remove(topic);
            }
        }

        if (_topics.TryGetValue(topic, out var t))
        {
            t.Remove(session);
        }
    }

    private static Command Parse(ReadOnlyMemory<byte> payload)
    {
        string? op = null;
        string? topic = null;
        Range data = default;
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
                var name = reader.GetString();
                reader.Read();
                switch (name)
                {
                    case "op" when reader.TokenType == JsonTokenType.String:
                        op = reader.GetString();
                        break;
                    case "topic" when reader.TokenType == JsonTokenType.String:
                        topic = reader.GetString();
                        break;
                    case "echo" when reader.TokenType is JsonTokenType.True or JsonTokenType.False:
                        echo = reader.GetBoolean();
                        break;
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

        if (op is not ("subscribe" or "unsubscribe" or "publish"))
        {
            throw new DuplexMessageRejectedException($"Unknown op \"{op}\"; use subscribe, unsubscribe or publish.");
        }

        if (string.IsNullOrEmpty(topic) || topic.Length > MaxTopicLength)
        {
            throw new DuplexMessageRejectedException($"A {op} needs a \"topic\" of 1 to {MaxTopicLength} characters.");
        }

        if (op == "publish" && !hasData)
        {
            throw new DuplexMessageRejectedException("A publish needs \"data\".");
        }

        return new Command(op, topic, data, echo);
    }

    private readonly record struct Command(string Op, string Topic, Range Data, bool Echo);

    /// <summary>A topic's subscribers: copy-on-write, so a broadcast walks a stable array with no lock held.</summary>
    private sealed class Topic
    {
        private readonly Lock _lock = new();
        private DuplexSession[] _subscribers = [];

        public DuplexSession[] Subscribers => Volatile.Read(ref _subscribers);

        public int Count => Subscribers.Length;

        public void Add(DuplexSession session)
        {
            using (_lock.EnterScope())
            {
                _subscribers = [.. _subscribers, session];
            }
        }

        public void Remove(DuplexSession session)
        {
            using (_lock.EnterScope())
            {
                _subscribers = [.. _subscribers.Where(s => s != session)];
            }
        }
    }
}
