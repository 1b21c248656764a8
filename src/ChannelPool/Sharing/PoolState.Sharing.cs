namespace ChannelPool;

// Adaptive sharing: whether leases join channels others hold, following how long leases last (Sharing/SharingController.cs).
internal sealed partial class PoolState<TChannel>
{
    /// <summary>Gets whether the pool times leases for adaptive sharing; read without the gate.</summary>
    public bool SamplesLeases => Volatile.Read(ref _sharing) is not null;

    /// <summary>Gets adaptive sharing's controller, for tests and diagnostics; null when sharing is not adaptive.</summary>
    internal SharingController? Sharing => Volatile.Read(ref _sharing);

    /// <summary>
    /// <see cref="Release"/> for a lease timed for adaptive sharing: its duration, ending at <paramref name="now"/>, goes to
    /// the controller first, which may start or stop sharing, before the release itself. A start or stop comes back in
    /// <c>change</c>, with the figures behind it, for the log.
    /// </summary>
    public ReleaseOutcome ReleaseSampled(
        PooledChannel<TChannel> entry, int slot, int version, EvictionReason? reason, long startedAt, long now, out SharingChange? change)
    {
        change = null;
        _gate.Enter();
        if (!TryEndLease_NoLock(entry, slot, version))
        {
            return default;
        }

        var turn = _sharing is { } sharing && entry.Shared is { } shared
            ? sharing.Record(now - startedAt, (shared.SharingSlots & (1UL << slot)) != 0, now, quiet: IsLastLease_NoLock(shared))
            : SharingSwitch.None;
        if (turn is SharingSwitch.Stopped or SharingSwitch.Paused)
        {
            // Channels already shared keep their leases, but take no new ones; each goes back to idle at its last release.
            _shared.StopSharing();
        }

        if (turn is SharingSwitch.Started or SharingSwitch.Stopped)
        {
            // A pause for a fresh baseline, and the resume after it, are routine: only a start and a stop are logged.
            var figures = _sharing!;
            change = new SharingChange(
                turn == SharingSwitch.Started, figures.SharingRate, figures.SharingMedian, figures.BaselineRate, figures.Baseline, figures.RetryIn);
        }

        return ReleaseOther_NoLock(entry, slot, reason);
    }

    /// <summary>Whether the lease being released on <paramref name="shared"/> is the pool's last: no other lease, and no one waiting.</summary>
    private bool IsLastLease_NoLock(PooledChannel<TChannel>.SharedSlots shared) =>
        _leasedCount == 1 && (shared.BusySlots & (shared.BusySlots - 1)) == 0 && _waiters.Count == 0;

    /// <summary>How many leases a channel may carry now: <see cref="PoolSettings.MaxLeasesPerChannel"/>, or 1 while adaptive sharing is off.</summary>
    private int ShareLimit_NoLock() => _sharing is { Allowed: false } ? 1 : _settings.MaxLeasesPerChannel;

    /// <summary>Follows the sharing setting: a controller, kept across reloads, when adaptive; none otherwise.</summary>
    private void FollowSharingSettings_NoLock(PoolSettings settings)
    {
        if (settings.LeaseSharing != LeaseSharing.Adaptive || settings.MaxLeasesPerChannel == 1)
        {
            Volatile.Write(ref _sharing, null);
        }
        else if (_sharing is null)
        {
            Volatile.Write(ref _sharing, new SharingController(_timeProvider.TimestampFrequency, _timeProvider.GetTimestamp()));

            // Sharing starts off, until the controller has its baseline.
            _shared.StopSharing();
        }
    }
}

/// <summary>Adaptive sharing started or stopped, with the figures behind it; durations in timestamp units.</summary>
internal readonly record struct SharingChange(bool Started, double Rate, long Median, double BaselineRate, long BaselineMedian, TimeSpan RetryIn);
