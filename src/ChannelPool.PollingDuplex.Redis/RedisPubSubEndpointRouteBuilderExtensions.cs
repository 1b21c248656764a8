using ChannelPool.PollingDuplex;
using ChannelPool.PollingDuplex.Redis;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps the pub/sub service with its sessions and topics in Redis.</summary>
public static class RedisPubSubEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Maps the pub/sub service at <paramref name="pattern"/>, as <c>MapPollingDuplexPubSub</c> does, with its sessions
    /// and topics in the Redis that <c>AddPollingDuplexRedis</c> named: every node that maps the same pattern on the
    /// same Redis serves every session, so a load balancer needs no affinity. Clients see the same protocol; a request
    /// that finds Redis away is answered <c>503 store-unavailable</c>, which clients retry.
    /// </summary>
    /// <param name="endpoints">The route builder.</param>
    /// <param name="pattern">The path prefix, for example <c>/pubsub</c>; the same on every node.</param>
    /// <param name="configure">Adjusts the endpoint's options; every node must use the same ones.</param>
    /// <returns>The route group.</returns>
    /// <exception cref="InvalidOperationException"><c>AddPollingDuplexRedis</c> was not called.</exception>
    /// <exception cref="Microsoft.Extensions.Options.OptionsValidationException">The endpoint's or the Redis options break a rule.</exception>
    public static RouteGroupBuilder MapPollingDuplexPubSubOnRedis(this IEndpointRouteBuilder endpoints, string pattern, Action<PollingDuplexOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        ArgumentException.ThrowIfNullOrWhiteSpace(pattern);
        var services = endpoints.ServiceProvider;
        return endpoints.MapPollingDuplexPubSubOnStore(
            pattern,
            options =>
            {
                var connection = services.GetService<RedisDuplexConnection>()
                    ?? throw new InvalidOperationException($"MapPollingDuplexPubSubOnRedis(\"{pattern}\") needs the Redis store: call services.AddPollingDuplexRedis(o => o.Configuration = \"host:port\") first.");
                return new RedisSessionStore(connection, pattern, options, services.GetService<TimeProvider>() ?? TimeProvider.System);
            },
            configure);
    }
}
