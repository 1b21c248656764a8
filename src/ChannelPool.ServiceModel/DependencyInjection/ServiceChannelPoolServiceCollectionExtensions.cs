using System.Diagnostics.Metrics;
using System.ServiceModel;
using ChannelPool;
using ChannelPool.ServiceModel;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers pooled WCF clients with a service collection.</summary>
public static class ServiceChannelPoolServiceCollectionExtensions
{
    /// <summary>
    /// Registers a named pool of WCF channels for <typeparamref name="TContract"/>. Like any pool registered with
    /// <c>AddChannelPool</c>, its options are validated at start (including against the binding's timeouts), the host
    /// warms it at start and drains it at stop, and <see cref="ChannelPoolBuilder{TChannel}.BindConfiguration"/> binds
    /// its options from configuration. The pool resolves as a keyed <see cref="ServiceChannelPool{TContract}"/> and
    /// <see cref="IChannelPool"/>; the first pool registered for a contract also resolves without a key.
    /// </summary>
    /// <typeparam name="TContract">The service contract.</typeparam>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The pool's name, unique among registered pools.</param>
    /// <param name="configureEndpoint">Sets the binding, the address and the channel factory's credentials.</param>
    /// <returns>A builder to configure the pool.</returns>
    /// <exception cref="InvalidOperationException">A pool with this name is already registered.</exception>
    public static ChannelPoolBuilder<TContract> AddChannelPool<TContract>(
        this IServiceCollection services,
        string name,
        Action<ServiceEndpointOptions<TContract>, IServiceProvider> configureEndpoint)
        where TContract : class
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(configureEndpoint);

        var builder = services.AddChannelPool<TContract, ServiceChannelPool<TContract>>(name, (provider, options) =>
        {
            var endpoint = new ServiceEndpointOptions<TContract>();
            configureEndpoint(endpoint, provider);
            var configured = provider.GetService<IOptionsMonitor<ServiceAddressOptions>>()?.Get(name);
            var addresses = WithConfigured(name, endpoint, configured);
            endpoint.Balancing ??= configured?.Balancing;
            if (endpoint.Binding is null || addresses.Length == 0)
            {
                throw new OptionsValidationException(
                    name,
                    typeof(ServiceEndpointOptions<TContract>),
                    [$"Channel pool '{name}': the endpoint callback must set both Binding and Address (or Addresses) (Binding is {Describe(endpoint.Binding)}, Address is {Describe(endpoint.Address)}, Addresses has {endpoint.Addresses.Count})."]);
            }

            return addresses.Length == 1 && endpoint.Balancing is null
                ? new ServiceChannelPool<TContract>(
                    endpoint.Binding,
                    addresses[0],
                    options,
                    endpoint.ConfigureChannelFactory,
                    provider.GetService<TimeProvider>(),
                    provider.GetService<ILoggerFactory>(),
                    provider.GetService<IMeterFactory>())
                : new ServiceChannelPool<TContract>(
                    endpoint.Binding,
                    addresses,
                    options,
                    endpoint.Balancing,
                    endpoint.ConfigureChannelFactory,
                    provider.GetService<TimeProvider>(),
                    provider.GetService<ILoggerFactory>(),
                    provider.GetService<IMeterFactory>());
        });
        services.TryAddSingleton(provider => provider.GetRequiredKeyedService<ServiceChannelPool<TContract>>(name));
        return builder;
    }

    /// <summary>
    /// Registers a named pool for <typeparamref name="TContract"/> and the proxy <typeparamref name="TProxy"/> that
    /// leases from it, as a transient service: the typed-client pattern of <c>AddHttpClient</c>. The proxy needs no
    /// constructor of its own; one that takes a <see cref="ServiceChannelPool{TContract}"/> gets this pool.
    /// </summary>
    /// <typeparam name="TContract">The service contract.</typeparam>
    /// <typeparam name="TProxy">The proxy, derived from <see cref="PooledClientBase{TContract}"/>.</typeparam>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The pool's name, unique among registered pools.</param>
    /// <param name="configureEndpoint">Sets the binding, the address and the channel factory's credentials.</param>
    /// <returns>A builder to configure the pool.</returns>
    /// <remarks>
    /// Resolve proxies from a scope (or inject them into scoped or transient services), and close them after use: the
    /// container disposes transients only when their scope ends, and a proxy holds its channel until it is closed.
    /// </remarks>
    public static ChannelPoolBuilder<TContract> AddPooledClient<TContract, TProxy>(
        this IServiceCollection services,
        string name,
        Action<ServiceEndpointOptions<TContract>, IServiceProvider> configureEndpoint)
        where TContract : class
        where TProxy : PooledClientBase<TContract>
    {
        var builder = services.AddChannelPool(name, configureEndpoint);
        var takesPool = typeof(TProxy).GetConstructors().Any(c => c.GetParameters().Any(p => p.ParameterType == typeof(ServiceChannelPool<TContract>)));
        services.AddTransient(provider =>
        {
            var pool = provider.GetRequiredKeyedService<ServiceChannelPool<TContract>>(name);
            var proxy = takesPool
                ? ActivatorUtilities.CreateInstance<TProxy>(provider, pool)
                : ActivatorUtilities.CreateInstance<TProxy>(provider);
            proxy.UseChannelPool(pool);
            return proxy;
        });
        return builder;
    }

    /// <summary>
    /// Binds the pool's addresses and balancing from configuration (<see cref="ServiceAddressOptions"/>): a list of
    /// URIs under <c>Addresses</c> and <see cref="BalancingOptions"/> under <c>Balancing</c>, beside the pool's options.
    /// </summary>
    /// <param name="builder">The pool's builder, from <c>AddChannelPool</c> or <c>AddPooledClient</c>.</param>
    /// <param name="sectionPath">The section; defaults to <c>ChannelPool:Pools:{name}</c>, the pool options' own.</param>
    /// <typeparam name="TContract">The service contract.</typeparam>
    /// <returns>The builder.</returns>
    public static ChannelPoolBuilder<TContract> BindAddresses<TContract>(this ChannelPoolBuilder<TContract> builder, string? sectionPath = null)
        where TContract : class
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.Services.AddOptions<ServiceAddressOptions>(builder.Name).BindConfiguration(sectionPath ?? $"ChannelPool:Pools:{builder.Name}");
        return builder;
    }

    /// <summary>The callback's addresses, then configuration's, each once; a configured one takes the callback address's identity.</summary>
    private static EndpointAddress[] WithConfigured<TContract>(string name, ServiceEndpointOptions<TContract> endpoint, ServiceAddressOptions? configured)
        where TContract : class
    {
        var addresses = endpoint.AllAddresses();
        if (configured is not { Addresses.Count: > 0 })
        {
            return addresses;
        }

        var relative = configured.Addresses.Select((uri, i) => (uri, i)).Where(a => a.uri is not { IsAbsoluteUri: true }).ToList();
        if (relative.Count > 0)
        {
            throw new OptionsValidationException(
                name,
                typeof(ServiceAddressOptions),
                relative.Select(a => $"Channel pool '{name}': Addresses:{a.i} is '{a.uri}', which is not an absolute URI. Give each address as an absolute URI of the binding's scheme."));
        }

        var identity = configured.DnsIdentity is { Length: > 0 } dns ? new DnsEndpointIdentity(dns) : addresses.FirstOrDefault()?.Identity;
        return [.. addresses, .. configured.Addresses.Where(uri => !addresses.Any(a => a.Uri == uri)).Select(uri => new EndpointAddress(uri, identity))];
    }

    private static string Describe(object? value) => value is null ? "not set" : "set";
}
