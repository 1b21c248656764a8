using System.Collections.Concurrent;
using System.Text.Json;
using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex.PubSub;

/// <summary>The publisher of one mapped pub/sub endpoint: checks what the application hands it, then asks the endpoint's store.</summary>
internal sealed class PubSubPublisher(DuplexSessionStore store) : IPubSubPublisher
{
    public string Endpoint => store.Endpoint;

    public ValueTask PublishAsync(string topic, DuplexMessage data, CancellationToken cancellationToken = default)
    {
        PubSubTopicName.ThrowIfInvalid(topic, nameof(topic));
        ArgumentNullException.ThrowIfNull(data);
        if (!data.IsJson)
        {
            throw new ArgumentException($"Published data must be one JSON value, since subscribers receive {{\"topic\":\"{topic}\",\"data\":<data>}}; make it with DuplexMessage.FromJson.", nameof(data));
        }

        var notification = PubSubNotification.Create(topic, JsonEncodedText.Encode(topic).EncodedUtf8Bytes, data.Payload.Span, store.Options.MaxMessageSize, fromClient: false);
        return store.PublishAsync(topic, notification, cancellationToken);
    }

    public ValueTask SendToUserAsync(string userId, DuplexMessage message, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(userId);
        ArgumentNullException.ThrowIfNull(message);
        if (!message.IsJson)
        {
            throw new ArgumentException("A message for a user must be JSON, since some of their sessions may be text-encoded; make it with DuplexMessage.FromJson.", nameof(message));
        }

        if (message.Payload.Length > store.Options.MaxMessageSize)
        {
            throw new ArgumentException($"A {message.Payload.Length}-byte message exceeds endpoint '{store.Endpoint}''s {store.Options.MaxMessageSize}-byte MaxMessageSize, which its clients enforce.", nameof(message));
        }

        return store.SendToUserAsync(userId, message, cancellationToken);
    }

    public ValueTask<long> CountSubscribersAsync(string topic, CancellationToken cancellationToken = default)
    {
        PubSubTopicName.ThrowIfInvalid(topic, nameof(topic));
        return store.CountSubscribersAsync(topic, cancellationToken);
    }
}

/// <summary>
/// The publishers of the pub/sub endpoints mapped so far, by pattern. Endpoints are mapped after the container is built,
/// so the DI registrations of <see cref="IPubSubPublisher"/> resolve through this.
/// </summary>
internal sealed class PubSubPublishers
{
    private readonly ConcurrentDictionary<string, IPubSubPublisher> _byPattern = new(StringComparer.Ordinal);

    public void Add(IPubSubPublisher publisher)
    {
        if (!_byPattern.TryAdd(publisher.Endpoint, publisher))
        {
            throw new InvalidOperationException($"A pub/sub endpoint is already mapped at '{publisher.Endpoint}'.");
        }
    }

    public IPubSubPublisher Get(object? key) => key is string pattern && _byPattern.TryGetValue(pattern, out var publisher)
        ? publisher
        : throw new InvalidOperationException($"There is no pub/sub endpoint mapped at '{key}'{Mapped()}. Resolve IPubSubPublisher with the pattern the endpoint was mapped at, after mapping it (hosted services start after that).");

    public IPubSubPublisher Single() => _byPattern.Count == 1
        ? _byPattern.Values.Single()
        : throw new InvalidOperationException(_byPattern.IsEmpty
            ? "No pub/sub endpoint is mapped yet: map one (MapPollingDuplexPubSub) before resolving IPubSubPublisher; hosted services start after the endpoints are mapped."
            : $"More than one pub/sub endpoint is mapped{Mapped()}: resolve the keyed IPubSubPublisher by its pattern, [FromKeyedServices(\"/pattern\")].");

    private string Mapped() => _byPattern.IsEmpty ? string.Empty : $" (mapped: {string.Join(", ", _byPattern.Keys.Order(StringComparer.Ordinal))})";
}
