using ChannelPool.PollingDuplex.Redis;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// Server-side publish and presence on one node, through its Redis endpoint's store: a stand-in for the public
/// publisher service of issue 24, which the other half of that work adds. After the merge, tests resolve that service
/// instead; what they assert does not change.
/// </summary>
internal sealed class StorePublisher(IServiceProvider services)
{
    private DuplexSessionStore Store => services.GetRequiredService<RedisDuplexConnection>().Stores.Single(s => s.Endpoint == "/pubsub");

    public ValueTask PublishAsync(string topic, object data, CancellationToken cancellationToken = default) =>
        Store.PublishAsync(topic, DuplexMessage.FromJson(new { topic, data }), cancellationToken);

    public ValueTask SendToUserAsync(string userId, object data, CancellationToken cancellationToken = default) =>
        Store.SendToUserAsync(userId, DuplexMessage.FromJson(new { user = userId, data }), cancellationToken);

    public ValueTask<long> CountSubscribersAsync(string topic, CancellationToken cancellationToken = default) =>
        Store.CountSubscribersAsync(topic, cancellationToken);
}
