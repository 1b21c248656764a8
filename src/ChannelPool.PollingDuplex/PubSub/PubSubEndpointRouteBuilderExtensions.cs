using ChannelPool.PollingDuplex;
using ChannelPool.PollingDuplex.PubSub;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.AspNetCore.Routing;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps the pub/sub reference service.</summary>
public static class PubSubEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Maps the pub/sub service (see <see cref="PubSubHandler"/>) as a polling duplex endpoint at
    /// <paramref name="pattern"/>, with its sessions and topics in this process. The options must say who may use which
    /// topic (<see cref="PollingDuplexOptions.Topics"/>): a rule, or <see cref="PubSubTopicOptions.AllowAnonymous"/> on
    /// purpose. With <c>services.AddPollingDuplexPubSub()</c>, its <see cref="IPubSubPublisher"/> publishes from the server.
    /// </summary>
    /// <param name="endpoints">The route builder.</param>
    /// <param name="pattern">The path prefix, for example <c>/pubsub</c>.</param>
    /// <param name="configure">Adjusts the endpoint's options; sets <see cref="PollingDuplexOptions.Topics"/>.</param>
    /// <returns>The route group, to add authentication, CORS or rate limiting to.</returns>
    /// <exception cref="InvalidOperationException">The options give no topic rule and do not allow anonymous topics; the message says what to add.</exception>
    /// <exception cref="Microsoft.Extensions.Options.OptionsValidationException">The options break a rule; the message names each.</exception>
    public static RouteGroupBuilder MapPollingDuplexPubSub(this IEndpointRouteBuilder endpoints, string pattern, Action<PollingDuplexOptions>? configure = null) =>
        endpoints.MapPollingDuplex<PubSubHandler>(pattern, configure);

    /// <summary>
    /// Maps the pub/sub service at <paramref name="pattern"/> on a store that runs its commands itself, for a package that
    /// keeps sessions and topics elsewhere than in this process (as <c>MapPollingDuplexPubSubOnRedis</c> does). The
    /// protocol, the topic rules and the server-side <see cref="IPubSubPublisher"/> are the same as
    /// <see cref="MapPollingDuplexPubSub"/>'s.
    /// </summary>
    /// <param name="endpoints">The route builder.</param>
    /// <param name="pattern">The path prefix, for example <c>/pubsub</c>.</param>
    /// <param name="createStore">Makes the endpoint's store from its resolved options.</param>
    /// <param name="configure">Adjusts the endpoint's options; sets <see cref="PollingDuplexOptions.Topics"/>.</param>
    /// <returns>The route group.</returns>
    /// <exception cref="InvalidOperationException">The options give no topic rule and do not allow anonymous topics, or the store was made for other options.</exception>
    /// <exception cref="Microsoft.Extensions.Options.OptionsValidationException">The options break a rule; the message names each.</exception>
    public static RouteGroupBuilder MapPollingDuplexPubSubOnStore(this IEndpointRouteBuilder endpoints, string pattern, Func<PollingDuplexOptions, DuplexSessionStore> createStore, Action<PollingDuplexOptions>? configure = null) =>
        endpoints.MapOnStore(pattern, createStore, configure, pubSub: true);
}
