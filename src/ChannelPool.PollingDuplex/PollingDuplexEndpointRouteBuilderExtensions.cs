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
    /// <typeparamref name="THandler"/> handles. The endpoint's options are the named options <paramref name="pattern"/>,
    /// built by the options factory: unnamed <c>Configure</c> calls, then those for the name (and <c>ConfigureAll</c>),
    /// then <paramref name="configure"/>, then every <c>PostConfigure</c>; then the built-in and every registered
    /// validator run, here.
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

        var options = ResolveOptions(services, pattern, configure);
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

        // The catch-all loses to every route above, so it sees only wrong methods and unknown paths.
        group.Map("/{**path}", (RequestDelegate)PollingDuplexEndpoints.NotFoundOrWrongMethodAsync);
        return group;
    }

    internal static PollingDuplexOptions ResolveOptions(IServiceProvider services, string pattern, Action<PollingDuplexOptions>? configure)
    {
        // The factory, not hand-applied setups: it runs every Configure, PostConfigure and validator the host registered.
        IEnumerable<IConfigureOptions<PollingDuplexOptions>> setups = services.GetServices<IConfigureOptions<PollingDuplexOptions>>().ToList();
        var unnamed = new ConfigureNamedOptions<PollingDuplexOptions>(pattern, options =>
        {
            // Unnamed setups have always applied to every endpoint; ConfigureAll ones run in the named pass below.
            foreach (var setup in setups)
            {
                if (setup is ConfigureNamedOptions<PollingDuplexOptions> { Name: null })
                {
                    continue;
                }

                if (setup is IConfigureNamedOptions<PollingDuplexOptions> named)
                {
                    named.Configure(Options.DefaultName, options);
                }
                else
                {
                    setup.Configure(options);
                }
            }
        });
        IConfigureOptions<PollingDuplexOptions>[] all = [unnamed, .. setups.Where(s => s is IConfigureNamedOptions<PollingDuplexOptions>), new ConfigureNamedOptions<PollingDuplexOptions>(pattern, configure)];
        var validators = services.GetServices<IValidateOptions<PollingDuplexOptions>>().ToList();
        if (!validators.OfType<PollingDuplexOptionsValidator>().Any())
        {
            validators.Insert(0, new PollingDuplexOptionsValidator());
        }

        var factory = new OptionsFactory<PollingDuplexOptions>(all, services.GetServices<IPostConfigureOptions<PollingDuplexOptions>>(), validators);
        return factory.Create(pattern);
    }
}
