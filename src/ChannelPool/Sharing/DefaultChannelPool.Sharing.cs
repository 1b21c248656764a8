namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    // Whether leases are timed for adaptive sharing: the one field the lease path reads for it.
    private bool _sampleLeases;

    /// <summary>Gets adaptive sharing's controller, for tests and diagnostics; null when sharing is not adaptive.</summary>
    internal SharingController? Sharing => _state.Sharing;

    /// <summary>Starts or stops timing leases for adaptive sharing, as the settings now say.</summary>
    private void FollowSharing() => Volatile.Write(ref _sampleLeases, _state.SamplesLeases);

    /// <summary>
    /// Ends a lease timed for adaptive sharing: the state takes its duration with the release. Only a channel that can
    /// carry several leases is timed; a lease that began before sharing became adaptive is released as usual.
    /// </summary>
    private PoolState<TChannel>.ReleaseOutcome ReleaseSampled(PooledChannel<TChannel> entry, int slot, int version, EvictionReason? reason, long startedAt, out long now)
    {
        now = _timeProvider.GetTimestamp();
        return entry.Shared is not null && _sampleLeases
            ? _state.ReleaseSampled(entry, slot, version, reason, startedAt, now)
            : _state.Release(entry, slot, version, reason);
    }
}
