namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    // Whether leases are timed for adaptive sharing: the one field the lease path reads for it.
    private bool _sampleLeases;

    /// <summary>
    /// Gets how many leases may hold one channel at once, in force: <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/>,
    /// or the value the channels chose when it was left unset (1 in the core pool; the WCF adapter's choice per binding).
    /// A channel opened before a reload that raised it keeps the slots it opened with; a lower value applies at once.
    /// </summary>
    public int MaxLeasesPerChannel => _state.Settings.MaxLeasesPerChannel;

    /// <summary>Gets whether leases join channels others hold always, or while it pays (<see cref="ChannelPoolOptions.LeaseSharing"/>), in force.</summary>
    public LeaseSharing LeaseSharing => _state.Settings.LeaseSharing;

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
        if (entry.Shared is null || !_sampleLeases)
        {
            return _state.Release(entry, slot, version, reason);
        }

        var outcome = _state.ReleaseSampled(entry, slot, version, reason, startedAt, now, out var change);
        if (change is { } figures)
        {
            LogSharingChange(figures);
        }

        return outcome;
    }

    private void LogSharingChange(SharingChange change)
    {
        var frequency = _timeProvider.TimestampFrequency;
        var baselineMedian = TimeSpan.FromSeconds((double)change.BaselineMedian / frequency);
        if (change.Started)
        {
            Log.SharingStarted(_logger, Name, change.BaselineRate, baselineMedian);
        }
        else
        {
            Log.SharingStopped(_logger, Name, change.Rate, TimeSpan.FromSeconds((double)change.Median / frequency), change.BaselineRate, baselineMedian, change.RetryIn);
        }
    }
}
