using ChannelPool.PollingDuplex.BrowserClient;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Serves the polling duplex's browser client, so a page needs no npm.</summary>
public static class PollingDuplexBrowserClientEndpointRouteBuilderExtensions
{
    /// <summary>The path the browser client is served under when no other is given.</summary>
    public const string DefaultPattern = "/_channelpool/polling-duplex";

    /// <summary>
    /// Serves the browser client's ES modules under <paramref name="pattern"/>, so a page imports it from the app
    /// itself: <c>import { PubSubClient } from '/_channelpool/polling-duplex/index.js'</c>. Their TypeScript types
    /// (<c>index.d.ts</c>, ...) and source maps are served beside them. The files are embedded in this assembly; each is
    /// served with an ETag and revalidated on every page load (<c>Cache-Control: no-cache</c>), so a page never runs a
    /// stale module against a newer server.
    /// </summary>
    /// <param name="endpoints">The route builder.</param>
    /// <param name="pattern">The path prefix; <see cref="DefaultPattern"/> by default.</param>
    /// <returns>The route group, to add metadata such as authorization or CORS.</returns>
    public static RouteGroupBuilder MapPollingDuplexBrowserClient(this IEndpointRouteBuilder endpoints, string pattern = DefaultPattern)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        ArgumentException.ThrowIfNullOrWhiteSpace(pattern);

        // Loaded here, so an assembly built without the modules fails at start-up rather than on a page's request.
        var module = BrowserClientModule.Instance;
        var group = endpoints.MapGroup(pattern);
        group.MapMethods("/{file}", [HttpMethods.Get, HttpMethods.Head], (HttpContext context, string file) => module.ServeAsync(context, file));
        return group;
    }
}
