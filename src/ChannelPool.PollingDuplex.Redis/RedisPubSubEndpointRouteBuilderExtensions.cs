using ChannelPool.PollingDuplex;
using ChannelPool.PollingDuplex.Redis;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps polling duplex endpoints whose sessions live in Redis, served by every node that maps them.</summary>
public static class RedisPubSubEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Maps the pub/sub service at <paramref name="pattern"/>, as <c>MapPollingDuplexPubSub</c> does, with its sessions
    /// and topics in the Redis that <c>AddPollingDuplexRedis</c> named: every node that maps the same pattern on the
    /// same Redis serves every session, so a load balancer needs no affinity. Clients see the same protocol; a request
    /// that finds Redis away is answered <c>503 store-unavailable</c>, which clients retry. The options must say who may
    /// use which topic (<see cref="PollingDuplexOptions.Topics"/>), as on one node; with <c>AddPollingDuplexPubSub()</c>,
    /// the endpoint's <c>IPubSubPublisher</c> publishes, sends to users and counts subscribers across every node.
    /// </summary>
    /// <param name="endpoints">The route builder.</param>
    /// <param name="pattern">The path prefix, for example <c>/pubsub</c>; the same on every node.</param>
    /// <param name="configure">Adjusts the endpoint's options; every node must use the same ones (a node whose options differ fails to start).</param>
    /// <returns>The route group.</returns>
    /// <exception cref="InvalidOperationException"><c>AddPollingDuplexRedis</c> was not called, or the options give no topic rule and do not allow anonymous topics.</exception>
    /// <exception cref="Microsoft.Extensions.Options.OptionsValidationException">The endpoint's or the Redis options break a rule.</exception>
    public static RouteGroupBuilder MapPollingDuplexPubSubOnRedis(this IEndpointRouteBuilder endpoints, string pattern, Action<PollingDuplexOptions>? configure = null) =>
        MapOnRedis(endpoints, pattern, handler: null, nameof(MapPollingDuplexPubSubOnRedis), configure);

    /// <summary>
    /// Maps a polling duplex endpoint at <paramref name="pattern"/> whose sessions live in the Redis that
    /// <c>AddPollingDuplexRedis</c> named and whose messages <typeparamref name="THandler"/> handles, on every node that
    /// maps it: any node serves any request, a message is handed to the handler once across the cluster, and the
    /// handler's sends (<see cref="DuplexSessionHandle.SendAsync"/>, <see cref="AsyncPollingDuplexHandler.SendAsync"/>)
    /// reach their session whichever node holds its poll.
    /// </summary>
    /// <typeparam name="THandler">The application's handler, resolved from the container or created with its dependencies; one instance per endpoint.</typeparam>
    /// <param name="endpoints">The route builder.</param>
    /// <param name="pattern">The path prefix, for example <c>/duplex</c>; the same on every node.</param>
    /// <param name="configure">Adjusts the endpoint's options; every node must use the same ones (a node whose options differ fails to start).</param>
    /// <returns>The route group.</returns>
    /// <exception cref="InvalidOperationException"><c>AddPollingDuplexRedis</c> was not called, or the handler instance already serves another endpoint.</exception>
    /// <exception cref="Microsoft.Extensions.Options.OptionsValidationException">The endpoint's or the Redis options break a rule.</exception>
    public static RouteGroupBuilder MapPollingDuplexOnRedis<THandler>(this IEndpointRouteBuilder endpoints, string pattern, Action<PollingDuplexOptions>? configure = null)
        where THandler : AsyncPollingDuplexHandler
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        return MapOnRedis(endpoints, pattern, ActivatorUtilities.GetServiceOrCreateInstance<THandler>(endpoints.ServiceProvider), nameof(MapPollingDuplexOnRedis), configure);
    }

    private static RouteGroupBuilder MapOnRedis(IEndpointRouteBuilder endpoints, string pattern, AsyncPollingDuplexHandler? handler, string method, Action<PollingDuplexOptions>? configure)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        ArgumentException.ThrowIfNullOrWhiteSpace(pattern);
        var services = endpoints.ServiceProvider;
        DuplexSessionStore CreateStore(PollingDuplexOptions options)
        {
            var connection = services.GetService<RedisDuplexConnection>()
                ?? throw new InvalidOperationException($"{method}(\"{pattern}\") needs the Redis store: call services.AddPollingDuplexRedis(o => o.Configuration = \"host:port\") first.");
            var logger = services.GetService<ILoggerFactory>()?.CreateLogger("ChannelPool.PollingDuplex.Redis") ?? NullLogger.Instance;
            return new RedisSessionStore(connection, pattern, options, services.GetService<TimeProvider>() ?? TimeProvider.System, handler, logger);
        }

        // The pub/sub service gets its topic rules and IPubSubPublisher from the server package's mapping, as on one node.
        return handler is null
            ? endpoints.MapPollingDuplexPubSubOnStore(pattern, CreateStore, configure)
            : endpoints.MapPollingDuplexOnStore(pattern, CreateStore, configure);
    }
}
