using ChannelPool.PollingDuplex;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps polling duplex endpoints.</summary>
public static class PollingDuplexEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Maps a polling duplex endpoint at <paramref name="pattern"/>, whose sessions and messages
    /// <typeparamref name="THandler"/> handles. The endpoint's options start from any registered for the name
    /// <paramref name="pattern"/>, then <paramref name="configure"/> runs; they are validated here.
    /// </summary>
    /// <typeparam name="THandler">The application's handler, resolved from the container or created with its dependencies.</typeparam>
    /// <param name="endpoints">The route builder.</param>
    /// <param name="pattern">The path prefix, for example <c>/duplex</c>.</param>
    /// <param name="configure">Adjusts the endpoint's options.</param>
    /// <returns>The route group, to add metadata such as authorization or CORS.</returns>
    /// <exception cref="OptionsValidationException">The options break a rule; the message names each.</exception>
    public static RouteGroupBuilder MapPollingDuplex<THandler>(this IEndpointRouteBuilder endpoints, string pattern, Action<PollingDuplexOptions>? configure = null)
        where THandler : PollingDuplexHandler
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        ArgumentException.ThrowIfNullOrWhiteSpace(pattern);
        var services = endpoints.ServiceProvider;

        var options = new PollingDuplexOptions();
        services.GetService<IConfigureOptions<PollingDuplexOptions>>()?.Configure(options);
        foreach (var named in services.GetServices<IConfigureOptions<PollingDuplexOptions>>().OfType<IConfigureNamedOptions<PollingDuplexOptions>>())
        {
            named.Configure(pattern, options);
        }

        configure?.Invoke(options);
        var validation = new PollingDuplexOptionsValidator().Validate(pattern, options);
        if (validation.Failed)
        {
            throw new OptionsValidationException(pattern, typeof(PollingDuplexOptions), validation.Failures);
        }

        var logger = services.GetService<ILoggerFactory>()?.CreateLogger("ChannelPool.PollingDuplex") ?? NullLogger.Instance;
        var handler = ActivatorUtilities.GetServiceOrCreateInstance<THandler>(services);
        var server = new PollingDuplexServer(pattern, options, handler, services.GetService<TimeProvider>() ?? TimeProvider.System, logger);
        if (services.GetService<IHostApplicationLifetime>() is { } lifetime)
        {
            lifetime.ApplicationStopping.Register(server.Shutdown);
            lifetime.ApplicationStopped.Register(server.Dispose);
        }

        var protocol = new PollingDuplexEndpoints(server, logger);
        var group = endpoints.MapGroup(pattern);
        group.MapPost("/sessions", (RequestDelegate)protocol.OpenAsync);
        group.MapPost("/sessions/{id}/messages", (RequestDelegate)protocol.SendAsync);
        group.MapGet("/sessions/{id}/poll", (RequestDelegate)protocol.PollAsync);
        group.MapDelete("/sessions/{id}", (RequestDelegate)protocol.CloseAsync);
        return group;
    }
}
