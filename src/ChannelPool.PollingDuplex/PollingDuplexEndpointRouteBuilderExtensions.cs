using ChannelPool.PollingDuplex;
using ChannelPool.PollingDuplex.PubSub;
using ChannelPool.PollingDuplex.Stores;
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
        return endpoints.MapOnStore(
            pattern,
            options =>
            {
                var handler = ActivatorUtilities.GetServiceOrCreateInstance<THandler>(services);
                var store = new InMemorySessionStore(pattern, options, handler, services.GetService<TimeProvider>() ?? TimeProvider.System, CreateLogger(services));

                // Sessions in this process end with it, so held polls return at once rather than at their timeout.
                services.GetService<IHostApplicationLifetime>()?.ApplicationStopping.Register(store.Shutdown);
                return store;
            },
            configure,
            pubSub: typeof(PubSubHandler).IsAssignableFrom(typeof(THandler)));
    }

    /// <summary>
    /// Maps a polling duplex endpoint at <paramref name="pattern"/> whose sessions live in the store
    /// <paramref name="createStore"/> makes, for a package that keeps them elsewhere than in this process. Clients see
    /// the same protocol: every request is read, checked and answered by the same code as on an endpoint mapped with
    /// <see cref="MapPollingDuplex{THandler}"/>. The options are resolved and validated as there; the store is disposed
    /// when the application stops. A store that runs the pub/sub service maps with
    /// <c>MapPollingDuplexPubSubOnStore</c> instead, which adds the topic rules and the server-side publisher.
    /// </summary>
    /// <param name="endpoints">The route builder.</param>
    /// <param name="pattern">The path prefix, for example <c>/pubsub</c>.</param>
    /// <param name="createStore">Makes the endpoint's store from its resolved options.</param>
    /// <param name="configure">Adjusts the endpoint's options.</param>
    /// <returns>The route group, to add metadata such as authorization or CORS.</returns>
    /// <exception cref="OptionsValidationException">The options break a rule; the message names each.</exception>
    /// <exception cref="InvalidOperationException"><paramref name="createStore"/> returned a store for other options, or the options set topic rules, which only a pub/sub endpoint has.</exception>
    public static RouteGroupBuilder MapPollingDuplexOnStore(this IEndpointRouteBuilder endpoints, string pattern, Func<PollingDuplexOptions, DuplexSessionStore> createStore, Action<PollingDuplexOptions>? configure = null) =>
        endpoints.MapOnStore(pattern, createStore, configure, pubSub: false);

    /// <summary>
    /// Maps an endpoint on a store: resolves the options, checks the topic rules (required on a pub/sub endpoint, refused
    /// elsewhere), makes the store, registers a pub/sub endpoint's publisher, and maps the four requests.
    /// </summary>
    internal static RouteGroupBuilder MapOnStore(this IEndpointRouteBuilder endpoints, string pattern, Func<PollingDuplexOptions, DuplexSessionStore> createStore, Action<PollingDuplexOptions>? configure, bool pubSub)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        ArgumentException.ThrowIfNullOrWhiteSpace(pattern);
        ArgumentNullException.ThrowIfNull(createStore);
        var services = endpoints.ServiceProvider;
        var options = ResolveOptions(services, pattern, configure);
        if (!pubSub && options.Topics.IsConfigured)
        {
            throw new InvalidOperationException($"Polling duplex endpoint '{pattern}': options.Topics sets who may use which pub/sub topic, but this endpoint is not a pub/sub endpoint (map one with MapPollingDuplexPubSub). Leave Topics unset here.");
        }

        var topics = pubSub ? PubSubTopicAuthorizer.Create(pattern, options.Topics, services) : null;
        var store = createStore(options);
        if (store is null || !ReferenceEquals(store.Options, options) || store.Endpoint != pattern)
        {
            store?.Dispose();
            throw new InvalidOperationException($"MapPollingDuplexOnStore(\"{pattern}\"): the store must be made for this endpoint, with the options it was given, so it enforces the limits clients are told.");
        }

        if (pubSub)
        {
            services.GetService<PubSubPublishers>()?.Add(new PubSubPublisher(store));
        }

        services.GetService<IHostApplicationLifetime>()?.ApplicationStopped.Register(store.Dispose);
        var protocol = new PollingDuplexEndpoints(store, topics, CreateLogger(services));
        var group = endpoints.MapGroup(pattern);

        // The shipped rate-limit policy reads the user id the way this endpoint does.
        group.WithMetadata(new ChannelPool.PollingDuplex.RateLimiting.PollingDuplexEndpointMetadata(options));
        group.MapPost("/sessions", (RequestDelegate)protocol.OpenAsync);
        group.MapPost("/sessions/{id}/messages", PollingDuplexEndpoints.WithToken(protocol.SendAsync));
        group.MapGet("/sessions/{id}/poll", PollingDuplexEndpoints.WithToken(protocol.PollAsync));
        group.MapDelete("/sessions/{id}", PollingDuplexEndpoints.WithToken(protocol.CloseAsync));
        group.MapPost("/sessions/{id}/away", PollingDuplexEndpoints.WithToken(protocol.AwayAsync));

        // The catch-all loses to every route above, so it sees only wrong methods and unknown paths.
        group.Map("/{**path}", (RequestDelegate)PollingDuplexEndpoints.NotFoundOrWrongMethodAsync);
        return group;
    }

    private static ILogger CreateLogger(IServiceProvider services) =>
        services.GetService<ILoggerFactory>()?.CreateLogger("ChannelPool.PollingDuplex") ?? NullLogger.Instance;

    private static PollingDuplexOptions ResolveOptions(IServiceProvider services, string pattern, Action<PollingDuplexOptions>? configure)
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
