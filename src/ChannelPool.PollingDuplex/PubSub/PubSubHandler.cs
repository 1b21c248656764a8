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
    private readonly SessionGroups _topics = new();

    /// <summary>Gets the number of subscribers of <paramref name="topic"/>.</summary>
    /// <param name="topic">The topic.</param>
    /// <returns>How many sessions are subscribed.</returns>
    public int SubscriberCount(string topic) => _topics.MemberCount(topic);

    /// <summary>Gets how many topics have subscribers: a topic goes away with its last one.</summary>
    internal int TopicCount => _topics.Count;

    /// <summary>Publishes <paramref name="data"/> to <paramref name="topic"/> from the server side.</summary>
    /// <param name="topic">The topic: 1 to <see cref="MaxTopicLength"/> characters, no control characters.</param>
    /// <param name="data">One UTF-8 JSON value.</param>
    /// <returns>How many subscribers it was queued for.</returns>
    /// <exception cref="ArgumentException">
    /// The topic is not a valid name, the data is not one JSON value in valid UTF-8, or the notification would exceed
    /// the endpoint's MaxMessageSize.
    /// </exception>
    public int Publish(string topic, ReadOnlySpan<byte> data)
    {
        PubSubTopicName.ThrowIfInvalid(topic, nameof(topic));
        DuplexMessage value;
        try
        {
            // Checked on its own: data such as 1,"x":2 would make the whole notification valid JSON with a forged member.
            value = DuplexMessage.FromJsonUtf8(data.ToArray());
        }
        catch (ArgumentException ex)
        {
            throw new ArgumentException($"The data must be one JSON value in valid UTF-8: {ex.Message}", nameof(data), ex);
        }

        var subscribers = _topics.Members(topic);
        if (subscribers.Length == 0)
        {
            return 0;
        }

        return Fanout(subscribers, PubSubNotification.Create(topic, JsonEncodedText.Encode(topic).EncodedUtf8Bytes, value.Payload.Span, subscribers[0].MaxMessageSize, fromClient: false), except: null);
    }

    /// <inheritdoc />
    public override ValueTask OnMessageAsync(DuplexSession session, DuplexMessage message, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(session);
        var command = PubSubCommand.Parse(message);
        switch (command.Operation)
        {
            case PubSubOperation.Subscribe:
                Subscribe(session, command.Topic);
                break;
            case PubSubOperation.Unsubscribe:
                Unsubscribe(session, command.Topic);
                break;
            default:
                var subscribers = _topics.Members(command.Topic);
                if (subscribers.Length > 0)
                {
                    Fanout(subscribers, command.CreateNotification(session.MaxMessageSize), command.Echo ? null : session);
                }

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
                _topics.Remove(topic, session);
            }
        }

        return ValueTask.CompletedTask;
    }

    /// <summary>Queues a notification made once (by a client's publish or the server's) to every subscriber of <paramref name="topic"/>.</summary>
    internal int Publish(string topic, DuplexMessage notification) => Fanout(_topics.Members(topic), notification, except: null);

    /// <summary>Queues the same notification to every subscriber but <paramref name="except"/> (the publisher, unless it asked for an echo).</summary>
    private static int Fanout(DuplexSession[] subscribers, DuplexMessage notification, DuplexSession? except)
    {
        var queued = 0;
        foreach (var subscriber in subscribers)
        {
            if (subscriber != except && subscriber.Send(notification) == DuplexSendResult.Queued)
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
            if (topics.Contains(topic))
            {
                return;
            }

            if (topics.Count >= session.MaxSubscriptions)
            {
                throw new SubscriptionLimitException(session.MaxSubscriptions, topic);
            }

            topics.Add(topic);
        }

        _topics.Add(topic, session);

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

        _topics.Remove(topic, session);
    }
}

/// <summary>A subscribe past the session's MaxSubscriptionsPerSession: the store answers it <c>422 too-many-subscriptions</c>, counted received.</summary>
internal sealed class SubscriptionLimitException(int limit, string topic)
    : Exception($"subscribing to topic \"{topic}\" would exceed this session's limit of {limit} subscriptions (MaxSubscriptionsPerSession). Unsubscribe from a topic first, or use another session.");
