using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace ChannelPool;

/// <summary>
/// A caller's hold on one pooled channel. Dispose (or <see cref="Release"/>) it to give the channel back; what happens
/// next depends on the pool's <see cref="LeaseMode"/> and the channel's health.
/// </summary>
/// <typeparam name="TChannel">The channel type.</typeparam>
/// <remarks>
/// A lease is a small value, so acquiring one allocates nothing. Releasing is idempotent: a second release, including
/// one through a copy of this value, does nothing. Using <see cref="Channel"/> after release throws, because the
/// channel may already belong to someone else. When <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> is above 1,
/// other leases may hold the same channel at the same time.
/// </remarks>
public readonly struct ChannelLease<TChannel> : IDisposable, IAsyncDisposable, IEquatable<ChannelLease<TChannel>>
    where TChannel : class
{
    private readonly PooledChannel<TChannel>? _entry;

    // Slot (high half) and version (low half) in one field, so each of the lease's two registers holds one field and
    // the JIT keeps a lease returned in registers there, instead of spilling it to copy the two ints together.
    private readonly ulong _slotAndVersion;

    internal ChannelLease(PooledChannel<TChannel> entry, int slot, int version)
    {
        _entry = entry;
        _slotAndVersion = ((ulong)(uint)slot << 32) | (uint)version;
    }

    private int Slot => (int)(_slotAndVersion >> 32);

    private int Version => (int)_slotAndVersion;

    /// <summary>Gets the leased channel.</summary>
    /// <exception cref="InvalidOperationException">The lease was already released, or was never acquired.</exception>
    public TChannel Channel => EnsureActive().Channel;

    /// <summary>Gets the channel's entry in its pool, for the engine's own tests; <see langword="null"/> for <c>default</c>.</summary>
    internal PooledChannel<TChannel>? Entry => _entry;

    /// <summary>Gets whether this value came from a pool (it may have been released since); false for <c>default</c>.</summary>
    internal bool IsAcquired => _entry is not null;

    /// <summary>Gets whether this lease still holds its channel.</summary>
    public bool IsActive => _entry is not null && Volatile.Read(ref _entry.SlotAt(Slot).Version) == Version;

    /// <summary>Gets the pool-wide id of the leased channel, for logs and diagnostics.</summary>
    public long ChannelId => EnsureActive().Id;

    /// <summary>
    /// Marks the channel broken, for example after a call on it failed. A broken channel is aborted on release (the
    /// last release, when leases share it) and is never handed out again, whatever the <see cref="LeaseMode"/>.
    /// </summary>
    /// <exception cref="InvalidOperationException">The lease was already released, or was never acquired.</exception>
    public void MarkBroken() => EnsureActive().IsBroken = true;

    /// <summary>
    /// Marks the channel broken because a call on it failed with <paramref name="error"/>, as <see cref="MarkBroken()"/>
    /// does; and if the pool's <see cref="ChannelPoolOptions.IsFatalError"/> rule calls the error fatal, the release
    /// clears the pool: every channel opened before this one retires.
    /// </summary>
    /// <param name="error">What the call on the channel threw.</param>
    /// <exception cref="ArgumentNullException"><paramref name="error"/> is null.</exception>
    /// <exception cref="InvalidOperationException">The lease was already released, or was never acquired.</exception>
    public void MarkBroken(Exception error)
    {
        ArgumentNullException.ThrowIfNull(error);
        var entry = EnsureActive();
        entry.Failure = error;
        entry.IsBroken = true;
    }

    /// <summary>Gives the channel back to the pool. Calling it again does nothing.</summary>
    public void Release() => _entry?.Pool.Release(_entry, Slot, Version);

    /// <summary>Gives the channel back to the pool; same as <see cref="Release"/>.</summary>
    public void Dispose() => Release();

    /// <summary>Gives the channel back to the pool; same as <see cref="Release"/>. Never waits: closing happens in the background.</summary>
    /// <returns>A completed task.</returns>
    public ValueTask DisposeAsync()
    {
        Release();
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    public bool Equals(ChannelLease<TChannel> other) => ReferenceEquals(_entry, other._entry) && _slotAndVersion == other._slotAndVersion;

    /// <inheritdoc />
    public override bool Equals(object? obj) => obj is ChannelLease<TChannel> other && Equals(other);

    /// <inheritdoc />
    public override int GetHashCode() => HashCode.Combine(_entry, _slotAndVersion);

    /// <summary>Compares two leases for identity: same channel, same lease.</summary>
    /// <param name="left">A lease.</param>
    /// <param name="right">Another lease.</param>
    /// <returns><see langword="true"/> when both denote the same lease.</returns>
    public static bool operator ==(ChannelLease<TChannel> left, ChannelLease<TChannel> right) => left.Equals(right);

    /// <summary>Compares two leases for identity.</summary>
    /// <param name="left">A lease.</param>
    /// <param name="right">Another lease.</param>
    /// <returns><see langword="true"/> when they denote different leases.</returns>
    public static bool operator !=(ChannelLease<TChannel> left, ChannelLease<TChannel> right) => !left.Equals(right);

    private PooledChannel<TChannel> EnsureActive()
    {
        if (_entry is null || Volatile.Read(ref _entry.SlotAt(Slot).Version) != Version)
        {
            ThrowInactive(_entry);
        }

        return _entry;
    }

    // Out of line: the message's formatting, inlined into every caller of Channel, cost them a large zeroed frame.
    [DoesNotReturn]
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowInactive(PooledChannel<TChannel>? entry) => throw (entry is null
        ? new InvalidOperationException("This lease was never acquired from a pool.")
        : new InvalidOperationException(
            $"This lease on channel {entry.Id} of pool '{entry.Pool.Name}' was already released; acquire a new lease."));
}

/// <summary>
/// One open channel and its bookkeeping. It lives exactly as long as the channel, so a lease needs no object of its
/// own: a <see cref="ChannelLease{TChannel}"/> is this entry plus the slot it holds and the slot's version when it was
/// issued.
/// </summary>
/// <remarks>
/// A channel carries one lease at a time in slot 0, held in the entry itself. A channel opened while
/// <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> was above 1 also has <see cref="Shared"/>, with the extra slots
/// and the bookkeeping only sharing needs, so the one-lease path never touches it. Slots, their versions and every
/// flag here change only under the pool state's gate, except <see cref="IsBroken"/>, which a holder may set.
/// </remarks>
internal sealed class PooledChannel<TChannel>
    where TChannel : class
{
    /// <summary>Slot 0: the only slot of an unshared channel, the first of a shared one.</summary>
    internal LeaseSlot FirstSlot;

    public PooledChannel(DefaultChannelPool<TChannel> pool, long id, TChannel channel, long generation, long openedAt, double jitterDraw, int slots)
    {
        Pool = pool;
        Id = id;
        Channel = channel;
        Generation = generation;
        OpenedAt = openedAt;
        JitterDraw = jitterDraw;
        Shared = slots > 1 ? new SharedSlots(slots) : null;
    }

    public DefaultChannelPool<TChannel> Pool { get; }

    public long Id { get; }

    public TChannel Channel { get; }

    /// <summary>
    /// Gets the pool's clear generation when this channel's open began: a clear retires every channel of an earlier one,
    /// so an open already under way when the pool was cleared is retired as it lands.
    /// </summary>
    public long Generation { get; }

    /// <summary>Gets the <see cref="TimeProvider.GetTimestamp"/> value when the channel finished opening.</summary>
    public long OpenedAt { get; }

    /// <summary>
    /// Gets this channel's random draw in [0, 1): the share of the allowed jitter its deadline is brought forward by.
    /// Kept, rather than the deadline alone, so a new lifetime or jitter setting can be applied to channels already open.
    /// </summary>
    public double JitterDraw { get; }

    /// <summary>
    /// Gets the timestamp from which the cached clock counts this channel as expired: its jittered deadline less one
    /// clock resolution (see <see cref="PoolClock"/>). Precomputed so the hot path compares one number.
    /// </summary>
    public long EvictAfter { get; private set; }

    /// <summary>Gets this channel's own, jittered, deadline as a <see cref="TimeProvider.GetTimestamp"/> value.</summary>
    public long ExpiresAt { get; private set; }

    /// <summary>Gets the sharing bookkeeping; <see langword="null"/> for a channel that carries one lease at a time.</summary>
    public SharedSlots? Shared { get; }

    /// <summary>Gets how many leases this channel can carry at once.</summary>
    public int SlotCount => Shared?.Count ?? 1;

    /// <summary>
    /// Gets or sets where the pool placed this channel's deadline before jitter, as a share of the lifetime after it
    /// opened (see <c>Eviction/PoolState.Expiry.cs</c>): up to 1, or a little over it, which the lifetime then caps. Kept
    /// as a share so a new lifetime moves the deadline with it. Written under the gate.
    /// </summary>
    public double LifeShare { get; set; } = 1;

    /// <summary>
    /// Gets the timestamp from which this channel is near its deadline: the pool opens its replacement in the
    /// background from then on (when the idle target needs it), so a caller never finds only expired channels.
    /// </summary>
    public long ReplaceAt { get; private set; }

    /// <summary>Gets or sets whether the pool already opened this channel's replacement. Written under the gate.</summary>
    public bool ReplacementStarted { get; set; }

    /// <summary>Sets the deadline from the pool's current lifetime settings. Called under the pool state's gate.</summary>
    /// <param name="lifetime">The channel lifetime, in timestamp units.</param>
    /// <param name="jitterSpan">The most the deadline may be brought forward at random, in timestamp units.</param>
    /// <param name="resolution">The cached clock's resolution, in timestamp units.</param>
    /// <param name="lead">How long before its deadline the channel is replaced, in timestamp units.</param>
    public void ScheduleExpiry(long lifetime, long jitterSpan, long resolution, long lead)
    {
        // Never later than one lifetime after the open, whatever the placement said.
        ExpiresAt = Math.Min(OpenedAt + (long)(lifetime * LifeShare) - (long)(jitterSpan * JitterDraw), OpenedAt + lifetime);
        EvictAfter = IsRetired ? long.MinValue : ExpiresAt - resolution;
        ReplaceAt = ExpiresAt - lead;
    }

    /// <summary>
    /// Gets whether a clear retired this channel while it was leased: it is evicted when its lease ends. Set under the
    /// pool state's gate.
    /// </summary>
    public bool IsRetired { get; private set; }

    /// <summary>Gets why this channel counts as expired: a clear retired it, or its lifetime ended.</summary>
    public EvictionReason ExpiredReason => IsRetired ? EvictionReason.Cleared : EvictionReason.LifetimeExpired;

    /// <summary>
    /// Retires the channel: it expires now. The lease and release paths already compare <see cref="EvictAfter"/> with
    /// the clock, so a cleared channel costs them no check of its own. Called under the pool state's gate.
    /// </summary>
    public void Retire()
    {
        IsRetired = true;
        EvictAfter = long.MinValue;
    }

    /// <summary>Gets or sets when the channel last went idle, on the pool's cached clock. Written under the gate.</summary>
    public long IdleSince { get; set; }

    /// <summary>
    /// Gets or sets where the channel is in the pool: opening (not counted yet), idle (or parked), leased, or evicted
    /// (being closed). Written under the gate by every transition that moves the channel, and summed by the invariant
    /// check against the pool's counts, as HikariCP's <c>ConcurrentBag</c> entries carry their state. Idle and leased
    /// are written only where the invariant is checked (<see cref="PoolInvariant"/>), so the lease and release fast
    /// paths pay nothing for them otherwise; evicted is written always.
    /// </summary>
    public ChannelPlace Place { get; set; }

    /// <summary>Gets whether the channel was evicted: it has left the pool for good and is being closed.</summary>
    public bool IsEvicted => Place == ChannelPlace.Evicted;

    /// <summary>
    /// Gets how many leases the channel carries: 0 unless leased; 1 for a channel that takes one lease at a time; the
    /// busy slots of a shared one. Read by the invariant check.
    /// </summary>
    public int LeaseCount => Place != ChannelPlace.Leased ? 0
        : Shared is { } shared ? System.Numerics.BitOperations.PopCount(shared.BusySlots) : 1;

    /// <summary>Gets or sets whether a holder marked the channel broken. Reset when it is leased from idle.</summary>
    public bool IsBroken { get; set; }

    /// <summary>Gets or sets the error a holder marked the channel broken with, for the pool's fatal-error rule.</summary>
    public Exception? Failure { get; set; }

    /// <summary>Gets or sets why the channel was evicted; set once it leaves the idle and leased states.</summary>
    public EvictionReason EvictionReason { get; set; }

    /// <summary>Gets the slot a lease holds.</summary>
    /// <param name="slot">The slot's index, below <see cref="SlotCount"/>.</param>
    /// <returns>The slot, to read or (under the gate) write in place.</returns>
    public ref LeaseSlot SlotAt(int slot)
    {
        if (slot == 0)
        {
            return ref FirstSlot;
        }

        return ref Shared!.Extra[slot - 1];
    }

    /// <summary>One lease's place on the channel.</summary>
    internal struct LeaseSlot
    {
        /// <summary>
        /// The version the current or next lease of this slot is issued under, bumped every time a lease of the slot
        /// ends (release, hand-over, or abort at drain). A lease handle holding an older version is stale, so releasing
        /// it twice, or using it after release, can never touch the slot's next holder.
        /// </summary>
        public int Version;

        /// <summary>
        /// The precise timestamp the slot's lease started, or <c>NotMeasured</c> when neither use time nor leaks are
        /// measured.
        /// </summary>
        public long StartedAt;

        /// <summary>
        /// The leak watch of the slot's lease, with the stack that acquired it; set only while leak detection is on, so
        /// it may be left over from an earlier lease (already returned) once detection is turned off.
        /// </summary>
        public LeaseWatch? Watch;
    }

    /// <summary>What only a channel that carries several leases at once needs. Changed only under the gate.</summary>
    internal sealed class SharedSlots(int count)
    {
        /// <summary>Slots 1 and up; slot 0 is <see cref="FirstSlot"/>.</summary>
        public readonly LeaseSlot[] Extra = new LeaseSlot[count - 1];

        public int Count => Extra.Length + 1;

        /// <summary>Gets or sets which slots are leased: bit <c>i</c> for slot <c>i</c>. Zero while the channel is idle.</summary>
        public ulong BusySlots { get; set; }

        /// <summary>
        /// Gets or sets which slots' leases began while the pool let leases share channels: bit <c>i</c> for slot <c>i</c>.
        /// Adaptive sharing times those apart from leases that began while each lease had a channel of its own.
        /// </summary>
        public ulong SharingSlots { get; set; }

        /// <summary>Gets or sets whether the channel is in the pool's list of leased channels with a free slot.</summary>
        public bool IsShareable { get; set; }

        /// <summary>Slot 0 is leased from idle, while the pool lets leases share channels or not.</summary>
        public void LeaseFromIdle(bool sharing)
        {
            BusySlots = 1;
            SharingSlots = sharing ? 1UL : 0;
        }

        /// <summary>A released <paramref name="slot"/> goes straight to a waiter, while the pool lets leases share channels or not.</summary>
        public void HandOver(int slot, bool sharing)
        {
            var bit = 1UL << slot;
            SharingSlots = sharing ? SharingSlots | bit : SharingSlots & ~bit;
        }

        /// <summary>
        /// Gets or sets why the channel takes no more leases: a holder found it broken, unusable or expired while others
        /// still held it. The last holder's release evicts it for this reason.
        /// </summary>
        public EvictionReason? RetireReason { get; set; }
    }
}

/// <summary>
/// Where a pooled channel is, one place at a time. Every channel the pool opened and has not finished closing is in
/// exactly one of these, and the pool's counts are the sums of them (see <see cref="PoolState{TChannel}"/>).
/// </summary>
internal enum ChannelPlace : byte
{
    /// <summary>Its open finished but the state has not yet placed it: the moment between the factory and the gate.</summary>
    Opening,

    /// <summary>In the idle queue, or parked while the pool is paused.</summary>
    Idle,

    /// <summary>Leased, once or (on a shared channel) several times; a channel a clear retired stays here until its release.</summary>
    Leased,

    /// <summary>Evicted: it left the pool for good and is being closed.</summary>
    Evicted,
}
