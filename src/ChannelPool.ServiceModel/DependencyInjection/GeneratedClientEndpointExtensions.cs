using System.ServiceModel;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;

namespace ChannelPool.ServiceModel;

/// <summary>Points a registered pool at an endpoint that a generated WCF client describes.</summary>
public static class GeneratedClientEndpointExtensions
{
    /// <summary>
    /// Sets the binding and address, and makes each channel factory of the pool carry the endpoint's name and run the
    /// generated <c>ConfigureEndpoint</c> partial method, as the generated client's <c>EndpointConfiguration</c>
    /// constructors do. The pooled twin's generated <c>UseEndpoint</c> calls this with the generated client's own
    /// <c>GetBindingForEndpoint</c> and <c>GetEndpointAddress</c>.
    /// </summary>
    /// <typeparam name="TContract">The service contract.</typeparam>
    /// <param name="endpoint">The endpoint of a pool registered with <c>AddPooledClient</c> or <c>AddChannelPool</c>.</param>
    /// <param name="binding">The binding.</param>
    /// <param name="address">The service's address.</param>
    /// <param name="endpointName">The endpoint's name, the <c>EndpointConfiguration</c> value's name.</param>
    /// <param name="configureEndpoint">The generated client's <c>ConfigureEndpoint</c>; null when there is none.</param>
    /// <returns>The same endpoint options. A <see cref="ServiceEndpointOptions{TContract}.ConfigureChannelFactory"/> set before runs after <paramref name="configureEndpoint"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="endpoint"/>, <paramref name="binding"/> or <paramref name="address"/> is null.</exception>
    /// <exception cref="ArgumentException"><paramref name="endpointName"/> is null or empty.</exception>
    public static ServiceEndpointOptions<TContract> UseGeneratedEndpoint<TContract>(
        this ServiceEndpointOptions<TContract> endpoint,
        Binding binding,
        EndpointAddress address,
        string endpointName,
        Action<ServiceEndpoint, ClientCredentials>? configureEndpoint)
        where TContract : class
    {
        ArgumentNullException.ThrowIfNull(endpoint);
        ArgumentNullException.ThrowIfNull(binding);
        ArgumentNullException.ThrowIfNull(address);
        ArgumentException.ThrowIfNullOrEmpty(endpointName);

        endpoint.Binding = binding;
        endpoint.Address = address;
        endpoint.ConfigureChannelFactory = GeneratedEndpoint.ConfigureFactory(endpointName, configureEndpoint, endpoint.ConfigureChannelFactory);
        return endpoint;
    }
}
