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

    /// <summary>Gets how many topics have subscribers: a topic goes away with its last one.</summary>
    internal int TopicCount => _topics.Count;

    /// <summary>Publishes <paramref name="data"/> to <paramref name="topic"/> from the server side.</summary>
    /// <param name="topic">The topic.</param>
    /// <param name="data">One UTF-8 JSON value.</param>
    /// <returns>How many subscribers it was queued for.</returns>
    /// <exception cref="ArgumentException">
    /// The data is not one JSON value in valid UTF-8, or the notification would exceed the endpoint's MaxMessageSize.
    /// </exception>
    public int Publish(string topic, ReadOnlySpan<byte> data)
    {
        ArgumentNullException.ThrowIfNull(topic);
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

        return Fanout(topic, JsonEncodedText.Encode(topic).EncodedUtf8Bytes, value.Payload.Span, except: null, fromClient: false);
    }

    /// <summary>Queues a notification made once (<see cref="PubSubCommand.CreateNotification"/>) to every subscriber of <paramref name="topic"/>.</summary>
    internal int Publish(string topic, DuplexMessage notification)
    {
        if (!_topics.TryGetValue(topic, out var t))
        {
            return 0;
        }

        var queued = 0;
        foreach (var subscriber in t.Subscribers)
        {
            queued += subscriber.Send(notification) == DuplexSendResult.Queued ? 1 : 0;
        }

        return queued;
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
                Fanout(command.Topic, command.EscapedTopic, command.Data, command.Echo ? null : session, fromClient: true);
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
                RemoveFrom(topic, session);
            }
        }

        return ValueTask.CompletedTask;
    }

    /// <param name="topic">The topic's name.</param>
    /// <param name="escapedTopic">The name as JSON string content, escaped as the publisher wrote it, so it is never re-escaped longer.</param>
    /// <param name="data">One JSON value, checked.</param>
    /// <param name="except">The publisher, unless it asked for an echo.</param>
    /// <param name="fromClient">Whether a client's command asked for this, which makes an oversized notification its error.</param>
    private int Fanout(string topic, ReadOnlySpan<byte> escapedTopic, ReadOnlySpan<byte> data, DuplexSession? except, bool fromClient)
    {
        if (!_topics.TryGetValue(topic, out var t))
        {
            return 0;
        }

        var subscribers = t.Subscribers;
        var limit = (except ?? subscribers.FirstOrDefault())?.MaxMessageSize ?? int.MaxValue;
        var message = PubSubNotification.Create(topic, escapedTopic, data, limit, fromClient);
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

        while (_topics.GetOrAdd(topic, static _ => new Topic()) is var t && !t.TryAdd(session))
        {
            // The topic emptied and was retired: help remove it, and the next GetOrAdd makes a fresh one.
            _topics.TryRemove(new KeyValuePair<string, Topic>(topic, t));
        }

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

        RemoveFrom(topic, session);
    }

    /// <summary>Removes a subscriber; the last one out removes the topic, so topics nobody holds cost nothing.</summary>
    private void RemoveFrom(string topic, DuplexSession session)
    {
        if (_topics.TryGetValue(topic, out var t) && t.Remove(session))
        {
            _topics.TryRemove(new KeyValuePair<string, Topic>(topic, t));
        }
    }

    /// <summary>A topic's subscribers: copy-on-write, so a broadcast walks a stable array with no lock held.</summary>
    private sealed class Topic
    {
        private readonly Lock _lock = new();
        private DuplexSession[] _subscribers = [];
        private bool _retired;

        public DuplexSession[] Subscribers => Volatile.Read(ref _subscribers);

        public int Count => Subscribers.Length;

        /// <summary>Adds a subscriber; false when the topic has emptied and been retired, so the caller needs a new one.</summary>
        public bool TryAdd(DuplexSession session)
        {
            using (_lock.EnterScope())
            {
                if (_retired)
                {
                    return false;
                }

                _subscribers = [.. _subscribers, session];
                return true;
            }
        }

        /// <summary>Removes a subscriber; returns true when that left the topic empty, which retires it for good.</summary>
        public bool Remove(DuplexSession session)
        {
            using (_lock.EnterScope())
            {
                _subscribers = [.. _subscribers.Where(s => s != session)];
                _retired = _subscribers.Length == 0;
                return _retired;
            }
        }
    }
}
