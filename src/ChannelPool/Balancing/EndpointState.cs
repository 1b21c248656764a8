namespace ChannelPool;

/// <summary>Where one address of a <see cref="BalancedChannelPool{TChannel}"/> stands.</summary>
public enum EndpointState
{
    /// <summary>Takes leases.</summary>
    Active = 0,

    /// <summary>Ejected for failures or latency: takes no lease until its ejection time is over.</summary>
    Ejected = 1,

    /// <summary>Its ejection is over: it takes leases again once a channel to it has opened.</summary>
    Probing = 2,

    /// <summary>Vanished from resolution: takes no lease, and leaves once its leases are back.</summary>
    Draining = 3,
}
