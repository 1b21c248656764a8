using ChannelPool.PollingDuplex;
using ChannelPool.PollingDuplex.PubSub;
using Microsoft.AspNetCore.Routing;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps the pub/sub reference service.</summary>
public static class PubSubEndpointRouteBuilderExtensions
{
    /// <summary>Maps the pub/sub service (see <see cref="PubSubHandler"/>) as a polling duplex endpoint at <paramref name="pattern"/>.</summary>
    /// <param name="endpoints">The route builder.</param>
    /// <param name="pattern">The path prefix, for example <c>/pubsub</c>.</param>
    /// <param name="configure">Adjusts the endpoint's options.</param>
    /// <returns>The route group.</returns>
    public static RouteGroupBuilder MapPollingDuplexPubSub(this IEndpointRouteBuilder endpoints, string pattern, Action<PollingDuplexOptions>? configure = null) =>
        endpoints.MapPollingDuplex<PubSubHandler>(pattern, configure);
}
