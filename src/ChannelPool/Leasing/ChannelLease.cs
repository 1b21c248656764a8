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
