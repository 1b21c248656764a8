namespace ChannelPool;

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

    public PooledChannel(DefaultChannelPool<TChannel> pool, long id, TChannel channel, long openedAt, double jitterDraw)
    {
        Pool = pool;
        Id = id;
        Channel = channel;
        OpenedAt = openedAt;
        JitterDraw = jitterDraw;
    }

    public DefaultChannelPool<TChannel> Pool { get; }

    public long Id { get; }

    public TChannel Channel { get; }

    /// <summary>Gets the <see cref="TimeProvider.GetTimestamp"/> value when the channel finished opening.</summary>
    public long OpenedAt { get; }

    /// <summary>
    /// Gets this channel's random draw in [0, 1): the share of the allowed jitter its deadline is brought forward by.
    /// Kept, rather than the deadline alone, so a new lifetime or jitter setting can be applied to channels already open.
    /// </summary>
    public double JitterDraw { get; }

    /// <summary>Gets this channel's own, jittered, deadline as a <see cref="TimeProvider.GetTimestamp"/> value.</summary>
    public long ExpiresAt { get; private set; }

    /// <summary>Sets the deadline from the pool's current lifetime settings. Called under the pool's gate.</summary>
    /// <param name="lifetime">The channel lifetime, in timestamp units.</param>
    /// <param name="jitter">The largest fraction of the lifetime a deadline may be brought forward by.</param>
    public void ScheduleExpiry(long lifetime, double jitter) =>
        ExpiresAt = OpenedAt + lifetime - (long)(lifetime * jitter * JitterDraw);

    /// <summary>
    /// Gets or sets whether the channel was evicted: it has left the pool for good and is being closed. Set once, under the pool's
    /// gate. Whether an open channel is idle or leased is not recorded here: the idle queue knows, and writing it on
    /// every lease and release would move this object's cache line between cores for nothing.
    /// </summary>
    public bool IsEvicted { get; set; }

    /// <summary>Gets or sets whether the current holder marked the channel broken. Reset when a new lease starts.</summary>
    public bool IsBroken { get; set; }

    /// <summary>Gets or sets why the channel was evicted; set once it leaves the idle and leased states.</summary>
    public EvictionReason EvictionReason { get; set; }

    /// <summary>Gets or sets the precise timestamp the current lease started, or <c>NotMeasured</c> when use time is not measured.</summary>
    public long LeaseStartedAt { get; set; } = DefaultChannelPool<TChannel>.NotMeasured;
}
