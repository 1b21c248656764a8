using System.ServiceModel;
using System.ServiceModel.Channels;

namespace ChannelPool.ServiceModel;

/// <summary>
/// The service endpoint a registered pool talks to, set in code by the callback given to
/// <c>AddChannelPool&lt;TContract&gt;</c>: bindings and credentials are objects, not configuration values. Pool sizes and
/// timeouts stay in <see cref="ChannelPoolOptions"/>, bound from configuration as for any pool.
/// </summary>
/// <typeparam name="TContract">The service contract.</typeparam>
public sealed class ServiceEndpointOptions<TContract>
    where TContract : class
{
    /// <summary>Gets or sets the binding. Required.</summary>
    public Binding? Binding { get; set; }

    /// <summary>Gets or sets the service's address. Required.</summary>
    public EndpointAddress? Address { get; set; }

    /// <summary>
    /// Gets or sets what configures each channel factory before it opens: the endpoint's client credentials, the
    /// service certificate check, endpoint behaviors.
    /// </summary>
    public Action<ChannelFactory<TContract>>? ConfigureChannelFactory { get; set; }
}
