namespace ChannelPool.ServiceModel;

/// <summary>A channel a proxy holds for its life (a lease per proxy), as its endpoint's drain sees it.</summary>
internal interface IHeldChannel
{
    /// <summary>Gives the channel back, aborted, now if no call runs on it, or else when the running calls end.</summary>
    void ReleaseWhenIdle();
}
