namespace ChannelPool;

/// <summary>Where a pooled channel is in its life. Changed only under the pool's lock.</summary>
internal enum PooledChannelState
{
    Idle,
    Leased,
    Closing,
}

/// <summary>
/// One open channel and its bookkeeping. It lives exactly as long as the channel, so a lease needs no object of its
/// own: a <see cref="ChannelLease{TChannel}"/> is this entry plus the <see cref="LeaseVersion"/> it was issued under.
/// </summary>
internal sealed class PooledChannel<TChannel>
    where TChannel : class
{
    /// <summary>
    /// Bumped every time a lease ends (release, or abort at drain). A lease handle holding an older value is stale,
    /// so releasing it twice, or using it after release, can never touch the channel's next holder.
    /// </summary>
    internal int LeaseVersion;

    public PooledChannel(ChannelPool<TChannel> pool, long id, TChannel channel, long openedAt, long expiresAt)
    {
        Pool = pool;
        Id = id;
        Channel = channel;
        OpenedAt = openedAt;
        ExpiresAt = expiresAt;
    }

    public ChannelPool<TChannel> Pool { get; }

    public long Id { get; }

    public TChannel Channel { get; }

    /// <summary>Gets the <see cref="TimeProvider.GetTimestamp"/> value when the channel finished opening.</summary>
    public long OpenedAt { get; }

    /// <summary>Gets this channel's own, jittered, deadline as a <see cref="TimeProvider.GetTimestamp"/> value.</summary>
    public long ExpiresAt { get; }

    public PooledChannelState State { get; set; }

    /// <summary>Gets or sets whether the current holder marked the channel broken. Reset when a new lease starts.</summary>
    public bool IsBroken { get; set; }

    /// <summary>Gets or sets why the channel is being retired; set once it leaves the idle and leased states.</summary>
    public EvictionReason RetireReason { get; set; }

    /// <summary>Gets or sets the precise timestamp the current lease started, or <c>NotMeasured</c> when use time is not measured.</summary>
    public long LeaseStartedAt { get; set; } = ChannelPool<TChannel>.NotMeasured;
}
