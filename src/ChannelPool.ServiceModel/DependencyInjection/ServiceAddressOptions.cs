namespace ChannelPool.ServiceModel;

/// <summary>
/// A registered pool's addresses and balancing as configuration gives them: <c>BindAddresses()</c> binds them from the
/// pool's section (<c>ChannelPool:Pools:{name}:Addresses</c>, a list of URIs, and <c>…:Balancing</c>). They add to
/// what the endpoint callback sets, after it: its <c>Address</c> and <c>Addresses</c> come first.
/// </summary>
public sealed class ServiceAddressOptions
{
    /// <summary>Gets the service's addresses from configuration, each an absolute URI of the binding's scheme.</summary>
    public IList<Uri> Addresses { get; } = [];

    /// <summary>
    /// Gets or sets the DNS name a TLS binding checks the service's certificate against for the configured addresses
    /// (their <c>DnsEndpointIdentity</c>), when they are IP addresses or not the certificate's name; null takes the
    /// identity of the callback's first address, if it has one.
    /// </summary>
    public string? DnsIdentity { get; set; }

    /// <summary>
    /// Gets or sets the balancing options from configuration; null when the section has none. The endpoint callback's
    /// <see cref="ServiceEndpointOptions{TContract}.Balancing"/>, when set, wins.
    /// </summary>
    public BalancingOptions? Balancing { get; set; }
}
