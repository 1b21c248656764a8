using ChannelPool.PollingDuplex.Redis;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers the Redis store of the polling duplex pub/sub service.</summary>
public static class RedisPollingDuplexServiceCollectionExtensions
{
    /// <summary>
    /// Points this node at the Redis that every node of the cluster shares. Endpoints mapped with
    /// <c>MapPollingDuplexPubSubOnRedis</c> keep their sessions and topics there. The options are validated when the host
    /// starts (and when the first endpoint is mapped).
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="configure">Sets <see cref="RedisPollingDuplexOptions.Configuration"/> and the rest.</param>
    /// <returns>The service collection.</returns>
    public static IServiceCollection AddPollingDuplexRedis(this IServiceCollection services, Action<RedisPollingDuplexOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        services.AddOptions<RedisPollingDuplexOptions>().Configure(configure).ValidateOnStart();
        services.AddSingleton<IValidateOptions<RedisPollingDuplexOptions>, RedisPollingDuplexOptionsValidator>();
        services.AddSingleton<RedisDuplexConnection>();
        services.AddHostedService<RedisPollingDuplexStartup>();
        return services;
    }
}
