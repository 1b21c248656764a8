namespace ChannelPool.PollingDuplex.PubSub;

/// <summary>
/// Server-side push on one pub/sub endpoint, from anywhere in the application (a background service, a controller):
/// publish to a topic, send to a user's sessions, count a topic's subscribers. It works the same on every store; on a
/// shared store (Redis) it reaches sessions on every node. Register it with <c>services.AddPollingDuplexPubSub()</c>,
/// then inject it: <c>[FromKeyedServices("/pubsub")] IPubSubPublisher</c> names the endpoint by its pattern, and the
/// plain <c>IPubSubPublisher</c> is the application's only pub/sub endpoint.
/// </summary>
public interface IPubSubPublisher
{
    /// <summary>Gets the pattern of the endpoint it publishes on.</summary>
    string Endpoint { get; }

    /// <summary>
    /// Publishes <paramref name="data"/> to <paramref name="topic"/>'s subscribers, who receive
    /// <c>{"topic":"…","data":&lt;data&gt;}</c>: serialized once, the same bytes for every subscriber. Each subscriber gets
    /// it under its own session limits (a full session drops it behind a gap, or faults, as its overflow policy says).
    /// Messages published here to one topic reach each subscriber in order.
    /// </summary>
    /// <param name="topic">The topic: 1 to <see cref="PubSubHandler.MaxTopicLength"/> characters, no control characters.</param>
    /// <param name="data">One JSON value (<see cref="DuplexMessage.FromJson{T}(T, System.Text.Json.JsonSerializerOptions?)"/>).</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>A task that completes when the notification is queued (in memory) or stored (on a shared store).</returns>
    /// <exception cref="ArgumentException">The topic is not a valid name, the data is not JSON, or the notification would exceed the endpoint's MaxMessageSize.</exception>
    ValueTask PublishAsync(string topic, DuplexMessage data, CancellationToken cancellationToken = default);

    /// <summary>
    /// Sends <paramref name="message"/> as it is to every session of the user <paramref name="userId"/> (sessions opened
    /// by requests that user signed), exactly once each; messages sent here to one user reach each of their sessions in
    /// order. A user with no session gets nothing, and that is not an error.
    /// </summary>
    /// <param name="userId">The user's id, as <see cref="PollingDuplexOptions.UserIdSelector"/> gives it.</param>
    /// <param name="message">A JSON message (sessions may be text-encoded), at most the endpoint's MaxMessageSize.</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>A task that completes when the message is queued (in memory) or stored (on a shared store).</returns>
    /// <exception cref="ArgumentException">The user id is empty, or the message is not JSON or too large.</exception>
    ValueTask SendToUserAsync(string userId, DuplexMessage message, CancellationToken cancellationToken = default);

    /// <summary>Counts the sessions subscribed to <paramref name="topic"/>; on a shared store, over every node.</summary>
    /// <param name="topic">The topic.</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>How many sessions are subscribed.</returns>
    /// <exception cref="ArgumentException">The topic is not a valid name.</exception>
    ValueTask<long> CountSubscribersAsync(string topic, CancellationToken cancellationToken = default);
}
