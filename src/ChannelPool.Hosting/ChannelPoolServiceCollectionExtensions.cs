using System.Diagnostics.Metrics;
using ChannelPool;
using ChannelPool.Hosting;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers channel pools with a service collection.</summary>
public static class ChannelPoolServiceCollectionExtensions
{
    /// <summary>
    /// Registers a named pool of <typeparamref name="TChannel"/>. The pool is a singleton keyed by
    /// <paramref name="name"/>, resolvable as <see cref="DefaultChannelPool{TChannel}"/> and as <see cref="IChannelPool"/>;
    /// its options are validated when the host starts; the host warms it at start and drains it at stop.
    /// </summary>
    /// <typeparam name="TChannel">The channel type.</typeparam>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The pool's name, unique among registered pools.</param>
    /// <param name="factory">Creates the pool's channel factory.</param>
    /// <returns>A builder to configure the pool.</returns>
    /// <exception cref="ArgumentException"><paramref name="name"/> is empty.</exception>
    /// <exception cref="InvalidOperationException">A pool with this name is already registered.</exception>
    public static ChannelPoolBuilder<TChannel> AddChannelPool<TChannel>(
        this IServiceCollection services,
        string name,
        Func<IServiceProvider, IPooledChannelFactory<TChannel>> factory)
        where TChannel : class
    {
        ArgumentNullException.ThrowIfNull(factory);
        var builder = services.AddChannelPool<TChannel, DefaultChannelPool<TChannel>>(name, (provider, options) => new DefaultChannelPool<TChannel>(
            factory(provider),
            options,
            provider.GetService<TimeProvider>(),
            provider.GetService<ILoggerFactory>(),
            provider.GetService<IMeterFactory>()));
        services.AddKeyedSingleton<IChannelPool<TChannel>>(name, (provider, key) => provider.GetRequiredKeyedService<DefaultChannelPool<TChannel>>(key));
        return builder;
    }

    /// <summary>
    /// Registers a named pool whose channel factory, <typeparamref name="TFactory"/>, is resolved from the container or
    /// created with its constructor dependencies from it.
    /// </summary>
    /// <typeparam name="TChannel">The channel type.</typeparam>
    /// <typeparam name="TFactory">The channel factory type.</typeparam>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The pool's name, unique among registered pools.</param>
    /// <returns>A builder to configure the pool.</returns>
    public static ChannelPoolBuilder<TChannel> AddChannelPool<TChannel, TFactory>(this IServiceCollection services, string name)
        where TChannel : class
        where TFactory : class, IPooledChannelFactory<TChannel> =>
        services.AddChannelPool<TChannel>(name, provider => ActivatorUtilities.GetServiceOrCreateInstance<TFactory>(provider));

    /// <summary>
    /// Registers a named pool of any <see cref="IChannelPool"/> implementation, for example an adapter's pool that keeps
    /// several <see cref="DefaultChannelPool{TChannel}"/>s behind one name (the WCF adapter's <c>ServiceChannelPool</c>
    /// registers this way). It gets what every pool registered here gets: options validated at start, configuration
    /// binding and reload through the builder, warm-up at start, drain at stop, health checks.
    /// </summary>
    /// <typeparam name="TChannel">The channel type, which types the returned builder.</typeparam>
    /// <typeparam name="TPool">The pool type; the pool resolves as a keyed <typeparamref name="TPool"/> and <see cref="IChannelPool"/>.</typeparam>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The pool's name, unique among registered pools.</param>
    /// <param name="createPool">Creates the pool, once, from the services and the pool's validated options.</param>
    /// <returns>A builder to configure the pool.</returns>
    /// <exception cref="ArgumentException"><paramref name="name"/> is empty.</exception>
    /// <exception cref="InvalidOperationException">A pool with this name is already registered.</exception>
    public static ChannelPoolBuilder<TChannel> AddChannelPool<TChannel, TPool>(
        this IServiceCollection services,
        string name,
        Func<IServiceProvider, ChannelPoolOptions, TPool> createPool)
        where TChannel : class
        where TPool : class, IChannelPool
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(createPool);

        var existing = services.FirstOrDefault(d => d.ServiceType == typeof(ChannelPoolRegistration) && ((ChannelPoolRegistration)d.ImplementationInstance!).Name == name);
        if (existing is not null)
        {
            throw new InvalidOperationException(
                $"A channel pool named '{name}' is already registered (for {((ChannelPoolRegistration)existing.ImplementationInstance!).ChannelType.Name}). Pool names must be unique.");
        }

        services.AddSingleton(new ChannelPoolRegistration(name, typeof(TChannel)));

        // The registration name is the pool's name, whatever configuration says, so keys, metrics and health agree.
        services.AddOptionsWithValidateOnStart<ChannelPoolOptions>(name).PostConfigure(options => options.Name = name);
        services.AddOptionsWithValidateOnStart<ChannelPoolStartupOptions>(name);
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<ChannelPoolOptions>, ChannelPoolOptionsValidator>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<ChannelPoolStartupOptions>, ChannelPoolStartupOptionsValidator>());
        services.TryAddSingleton<IOptionsMonitor<ChannelPoolOptions>, LastGoodOptionsMonitor>();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, ChannelPoolHostedService>());

        services.AddKeyedSingleton(name, (provider, _) => createPool(provider, provider.GetRequiredService<IOptionsMonitor<ChannelPoolOptions>>().Get(name)));
        services.AddKeyedSingleton<IChannelPool>(name, (provider, key) => provider.GetRequiredKeyedService<TPool>(key));
        return new ChannelPoolBuilder<TChannel>(services, name);
    }
}
