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
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(factory);

        services.AddChannelPoolCore(name, typeof(TChannel));

        services.AddKeyedSingleton(name, (provider, _) => new DefaultChannelPool<TChannel>(
            factory(provider),
            provider.GetRequiredService<IOptionsMonitor<ChannelPoolOptions>>().Get(name),
            provider.GetService<TimeProvider>(),
            provider.GetService<ILoggerFactory>(),
            provider.GetService<IMeterFactory>()));
        services.AddKeyedSingleton<IChannelPool<TChannel>>(name, (provider, key) => provider.GetRequiredKeyedService<DefaultChannelPool<TChannel>>(key));
        services.AddKeyedSingleton<IChannelPool>(name, (provider, key) => provider.GetRequiredKeyedService<DefaultChannelPool<TChannel>>(key));

        return new ChannelPoolBuilder<TChannel>(services, name);
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
    /// Registers everything a named pool needs except the pool itself: its registration (which the hosted service and
    /// health checks find), its validated options, the last-good options monitor and the hosted service. The caller
    /// adds the pool as a keyed <see cref="IChannelPool"/> under <paramref name="name"/>.
    /// </summary>
    internal static void AddChannelPoolCore(this IServiceCollection services, string name, Type channelType)
    {
        var existing = services.FirstOrDefault(d => d.ServiceType == typeof(ChannelPoolRegistration) && ((ChannelPoolRegistration)d.ImplementationInstance!).Name == name);
        if (existing is not null)
        {
            throw new InvalidOperationException(
                $"A channel pool named '{name}' is already registered (for {((ChannelPoolRegistration)existing.ImplementationInstance!).ChannelType.Name}). Pool names must be unique.");
        }

        services.AddSingleton(new ChannelPoolRegistration(name, channelType));

        // The registration name is the pool's name, whatever configuration says, so keys, metrics and health agree.
        services.AddOptionsWithValidateOnStart<ChannelPoolOptions>(name).PostConfigure(options => options.Name = name);
        services.AddOptionsWithValidateOnStart<ChannelPoolStartupOptions>(name);
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<ChannelPoolOptions>, ChannelPoolOptionsValidator>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<ChannelPoolStartupOptions>, ChannelPoolStartupOptionsValidator>());
        services.TryAddSingleton<IOptionsMonitor<ChannelPoolOptions>, LastGoodOptionsMonitor>();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, ChannelPoolHostedService>());
    }
}
