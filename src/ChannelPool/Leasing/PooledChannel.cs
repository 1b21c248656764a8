namespace ChannelPool;

/// <summary>
/// One open channel and its bookkeeping. It lives exactly as long as the channel, so a lease needs no object of its
/// own: a <see cref="ChannelLease{TChannel}"/> is this entry plus the slot it holds and the slot's version when it was
/// issued.
/// </summary>
/// <remarks>
/// A channel has one slot per lease it may carry at once (<see cref="ChannelPoolOptions.MaxLeasesPerChannel"/>, 1 by
/// default). Slots and their versions change only under the pool's gate.
/// </remarks>
internal sealed class PooledChannel<TChannel>
    where TChannel : class
{
    /// <summary>
    /// One entry per slot: its version, bumped every time a lease of that slot ends (release, hand-over, or abort at
    /// drain), and when its lease started. A lease handle holding an older version is stale, so releasing it twice, or
    /// using it after release, can never touch the slot's next holder.
    /// </summary>
    internal readonly Slot[] Slots;

    public PooledChannel(DefaultChannelPool<TChannel> pool, long id, TChannel channel, long openedAt, double jitterDraw, int slots)
    {
        Pool = pool;
        Id = id;
        Channel = channel;
        OpenedAt = openedAt;
        JitterDraw = jitterDraw;
        Slots = new Slot[slots];
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

    /// <summary>Gets or sets which slots are leased: bit <c>i</c> for slot <c>i</c>. Zero while the channel is idle.</summary>
    public ulong BusySlots { get; set; }

    /// <summary>Gets or sets whether the channel is in the pool's list of leased channels with a free slot.</summary>
    public bool IsShareable { get; set; }

    /// <summary>
    /// Gets or sets why a shared channel takes no more leases: a holder found it broken, unusable or expired while
    /// others still held it. The last holder's release evicts it for this reason.
    /// </summary>
    public EvictionReason? RetireReason { get; set; }

    /// <summary>One lease's place on the channel.</summary>
    internal struct Slot
    {
        /// <summary>The version the current or next lease of this slot is issued under.</summary>
        public int Version;

        /// <summary>The precise timestamp the slot's lease started, or <c>NotMeasured</c> when use time is not measured.</summary>
        public long StartedAt;
    }
}
