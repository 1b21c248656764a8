using ChannelPool.PollingDuplex.PubSub;
using Microsoft.Extensions.DependencyInjection.Extensions;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers the pub/sub service's server-side publisher.</summary>
public static class PubSubServiceCollectionExtensions
{
    /// <summary>
    /// Registers <see cref="IPubSubPublisher"/> for the pub/sub endpoints the application maps: keyed by each endpoint's
    /// pattern (<c>[FromKeyedServices("/pubsub")]</c>), and unkeyed for the application's only one. Call it once, before
    /// building the host; the endpoints themselves are mapped as before.
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <returns>The service collection.</returns>
    public static IServiceCollection AddPollingDuplexPubSub(this IServiceCollection services)
    {
        ArgumentNullException.ThrowIfNull(services);
        services.TryAddSingleton<PubSubPublishers>();
        services.TryAddKeyedSingleton<IPubSubPublisher>(KeyedService.AnyKey, static (provider, key) => provider.GetRequiredService<PubSubPublishers>().Get(key));
        services.TryAddSingleton<IPubSubPublisher>(static provider => provider.GetRequiredService<PubSubPublishers>().Single());
        return services;
    }
}
