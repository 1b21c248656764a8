using System.Collections.Concurrent;
using System.ServiceModel;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;
using Microsoft.Extensions.Logging;

namespace ChannelPool.ServiceModel;

/// <summary>
/// The static entry point for applications without dependency injection, in the original 2007 pool's words:
/// <c>Initialize</c> at start-up, <see cref="Destroy"/> at shutdown. Proxies built with
/// <see cref="PooledClientBase{TContract}"/>'s parameterless constructor lease from the pool it initializes.
/// </summary>
/// <typeparam name="TContract">The service contract.</typeparam>
#pragma warning disable CA1000 // Static members on a generic type: one pool per contract is the point, as in the original.
public static class ChannelPoolFactory<TContract>
    where TContract : class
{
    private static readonly ConcurrentDictionary<EndpointKey, Lazy<ServiceChannelPool<TContract>>> ByEndpoint = new();
    private static volatile ServiceChannelPool<TContract>? _current;

    /// <summary>Gets the pool <c>Initialize</c> created, or null.</summary>
    public static ServiceChannelPool<TContract>? Current => _current;

    /// <summary>Creates the contract's pool and starts filling it in the background.</summary>
    /// <param name="binding">The binding.</param>
    /// <param name="address">The service's address.</param>
    /// <param name="configure">Configures the channel factory: credentials, the service certificate check, behaviors.</param>
    /// <param name="options">Pool settings; defaults when null.</param>
    /// <param name="loggerFactory">
    /// Where the pool logs: its warnings (a leaked lease with the stack that took it, a clear after a fatal error, a
    /// failed open) are only seen through it. Null logs nothing.
    /// </param>
    /// <returns>The pool.</returns>
    /// <exception cref="InvalidOperationException">The contract's pool is already initialized; call <see cref="Destroy"/> first.</exception>
#pragma warning disable RS0026 // Overloads told apart by the address parameter's type, which is never optional.
    public static ServiceChannelPool<TContract> Initialize(
        Binding binding,
        EndpointAddress address,
        Action<ChannelFactory<TContract>>? configure = null,
        ChannelPoolOptions? options = null,
        ILoggerFactory? loggerFactory = null)
    {
        return Install(new ServiceChannelPool<TContract>(binding, address, options, configure, loggerFactory: loggerFactory));
    }

    /// <summary>
    /// Creates the contract's pool over several addresses of the service, balanced between them (see
    /// <see cref="BalancedChannelPool{TChannel}"/>), and starts filling it in the background.
    /// </summary>
    /// <param name="binding">The binding.</param>
    /// <param name="addresses">The service's addresses: at least one, all of the binding's scheme, none twice.</param>
    /// <param name="balancing">How leases are spread and addresses ejected and resolved; defaults when null.</param>
    /// <param name="configure">Configures each channel factory: credentials, the service certificate check, behaviors.</param>
    /// <param name="options">Pool settings, shared out over the addresses; defaults when null.</param>
    /// <param name="loggerFactory">Where the pool logs; null logs nothing.</param>
    /// <returns>The pool.</returns>
    /// <exception cref="ArgumentException">The address list is empty, repeats an address or mixes schemes.</exception>
    /// <exception cref="InvalidOperationException">The contract's pool is already initialized; call <see cref="Destroy"/> first.</exception>
    public static ServiceChannelPool<TContract> Initialize(
        Binding binding,
        IEnumerable<EndpointAddress> addresses,
        BalancingOptions? balancing = null,
        Action<ChannelFactory<TContract>>? configure = null,
        ChannelPoolOptions? options = null,
        ILoggerFactory? loggerFactory = null) =>
        Install(new ServiceChannelPool<TContract>(binding, addresses, options, balancing, configure, loggerFactory: loggerFactory));
#pragma warning restore RS0026

    private static ServiceChannelPool<TContract> Install(ServiceChannelPool<TContract> pool)
    {
        if (Interlocked.CompareExchange(ref _current, pool, null) is not null)
        {
            pool.Dispose();
            throw new InvalidOperationException(
                $"The channel pool for {typeof(TContract).Name} is already initialized. Call ChannelPoolFactory<{typeof(TContract).Name}>.Destroy() before initializing it again.");
        }

        _ = pool.WarmUpAsync(readyChannels: 0);
        return pool;
    }

    /// <summary>Drains and closes the contract's pools, blocking until done. Prefer <see cref="DestroyAsync"/>.</summary>
    public static void Destroy()
    {
        foreach (var pool in TakeAll())
        {
            pool.Dispose();
        }
    }

    /// <summary>Drains and closes the contract's pools: the initialized one and those proxies made from a binding and address.</summary>
    /// <returns>A task that completes when every channel is closed.</returns>
    public static Task DestroyAsync() => Task.WhenAll(TakeAll().Select(pool => pool.DrainAsync()));

    /// <summary>
    /// The pools for proxies constructed with a binding and address, shared by address and kind of binding. A generated
    /// client's endpoint (<paramref name="endpointName"/> set) gets pools of its own, named after it.
    /// </summary>
    internal static ServiceChannelPool<TContract> ForEndpoint(
        Binding binding, EndpointAddress address, string? endpointName = null, Action<ServiceEndpoint, ClientCredentials>? configureEndpoint = null)
    {
        var key = new EndpointKey(binding.GetType(), binding.Name, binding.Namespace, address.Uri, address.Identity?.ToString(), endpointName, configureEndpoint);
        var lazy = ByEndpoint.GetOrAdd(
            key,
            static (endpointKey, arguments) => new Lazy<ServiceChannelPool<TContract>>(() =>
            {
                var pool = endpointKey.EndpointName is { } name
                    ? new ServiceChannelPool<TContract>(
                        arguments.binding, arguments.address, new ChannelPoolOptions { Name = name }, GeneratedEndpoint.ConfigureFactory<TContract>(name, endpointKey.ConfigureEndpoint))
                    : new ServiceChannelPool<TContract>(arguments.binding, arguments.address);
                _ = pool.WarmUpAsync(readyChannels: 0);
                return pool;
            }),
            (binding, address));
        try
        {
            return lazy.Value;
        }
        catch (Exception ex) when (ex is ArgumentException or InvalidOperationException)
        {
            // Bad input is not cached: the next proxy gets the same clear error, not a stale one.
            ByEndpoint.TryRemove(new KeyValuePair<EndpointKey, Lazy<ServiceChannelPool<TContract>>>(key, lazy));
            throw;
        }
    }

    private static List<ServiceChannelPool<TContract>> TakeAll()
    {
        var pools = new List<ServiceChannelPool<TContract>>();
        if (Interlocked.Exchange(ref _current, null) is { } current)
        {
            pools.Add(current);
        }

        foreach (var key in ByEndpoint.Keys)
        {
            if (ByEndpoint.TryRemove(key, out var lazy) && lazy.IsValueCreated)
            {
                pools.Add(lazy.Value);
            }
        }

        return pools;
    }

    private readonly record struct EndpointKey(
        Type BindingType, string BindingName, string BindingNamespace, Uri Address, string? Identity, string? EndpointName, Action<ServiceEndpoint, ClientCredentials>? ConfigureEndpoint);
}
#pragma warning restore CA1000
