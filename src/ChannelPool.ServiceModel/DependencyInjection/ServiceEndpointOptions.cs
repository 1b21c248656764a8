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

    /// <summary>Gets or sets the service's address. Required, unless <see cref="Addresses"/> lists the addresses.</summary>
    public EndpointAddress? Address { get; set; }

    /// <summary>
    /// Gets the service's addresses, when it runs as several instances: one pool balances over all of them (see
    /// <see cref="BalancedChannelPool{TChannel}"/>). <see cref="Address"/>, when also set, is added first.
    /// </summary>
    public IList<EndpointAddress> Addresses { get; } = [];

    /// <summary>
    /// Gets or sets how leases are spread over <see cref="Addresses"/> and addresses ejected and resolved; setting it
    /// balances even a single address (for <see cref="BalancingOptions.ResolveHostNames"/>). Defaults apply when null.
    /// </summary>
    public BalancingOptions? Balancing { get; set; }

    internal EndpointAddress[] AllAddresses() => Address is null ? [.. Addresses] : [Address, .. Addresses.Where(a => a != Address)];

    /// <summary>
    /// Gets or sets what configures each channel factory before it opens: the endpoint's client credentials, the
    /// service certificate check, endpoint behaviors.
    /// </summary>
    public Action<ChannelFactory<TContract>>? ConfigureChannelFactory { get; set; }
}
