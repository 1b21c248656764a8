using System.Runtime.CompilerServices;

namespace ChannelPool;

/// <summary>
/// Leak detection (<see cref="ChannelPoolOptions.LeakDetectionThreshold"/>): a lease held longer than the threshold is
/// logged once with the stack that acquired it and counted, and logged again if it comes back. Off, it costs the lease
/// path one comparison: no stack is captured and no clock read.
/// </summary>
/// <remarks>
/// A timer scans the leases instead of arming one timer per lease, as HikariCP does: a lease then costs a stack capture
/// and one small object, and nothing to cancel at release. The scan runs every quarter threshold (at most every 10 s),
/// so a leak is found at most that much after it passes the threshold.
/// </remarks>
public sealed partial class DefaultChannelPool<TChannel>
{
    private static readonly TimeSpan MaxLeakScanPeriod = TimeSpan.FromSeconds(10);
    private static readonly TimeSpan MinLeakScanPeriod = TimeSpan.FromMilliseconds(10);

    // The threshold in timestamp units, 0 while detection is off: the one field the lease path reads for it.
    private long _leakThreshold;

    /// <summary>Starts, retunes or stops the leak scan for a new threshold.</summary>
    private void WatchForLeaks(TimeSpan? threshold)
    {
        Volatile.Write(ref _leakThreshold, threshold is { } t ? Math.Max(1, (long)(t.TotalSeconds * _timeProvider.TimestampFrequency)) : 0);
        var period = threshold is { } every
            ? TimeSpan.FromTicks(Math.Clamp(every.Ticks / 4, MinLeakScanPeriod.Ticks, MaxLeakScanPeriod.Ticks))
            : Timeout.InfiniteTimeSpan;
        try
        {
            _leakTimer.Change(period, period);
        }
        catch (ObjectDisposedException)
        {
            // Drained meanwhile: nothing is leased any more.
        }
    }

    /// <summary>Starts watching a lease; out of line, so the lease path with detection off stays small.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Watch(ref PooledChannel<TChannel>.LeaseSlot lease, System.Diagnostics.StackTrace? acquiredAt, long now) =>
        Volatile.Write(ref lease.Watch, new LeaseWatch(acquiredAt ?? LeaseWatch.Capture(), now));

    /// <summary>The stack of a caller about to wait, when detection is on; the lease it gets later carries it.</summary>
    private System.Diagnostics.StackTrace? CaptureAcquiringStack() => Volatile.Read(ref _leakThreshold) != 0 ? LeaseWatch.Capture() : null;

    /// <summary>The leak scan: reports each lease held past the threshold, once.</summary>
    private void FindLeaks()
    {
        var threshold = Volatile.Read(ref _leakThreshold);
        if (threshold == 0)
        {
            return;
        }

        var now = _timeProvider.GetTimestamp();
        foreach (var entry in _state.OpenChannels())
        {
            for (var slot = 0; slot < entry.SlotCount; slot++)
            {
                ref var lease = ref entry.SlotAt(slot);
                if (Volatile.Read(ref lease.Watch) is { } watch && now - watch.LeasedAt >= threshold && watch.TryReport())
                {
                    _metrics.LeakFound();
                    Log.LeakFound(
                        _logger, Name, entry.Id, _timeProvider.GetElapsedTime(watch.LeasedAt, now),
                        _timeProvider.GetElapsedTime(0, threshold), watch.FormatAcquiringStack());
                }
            }
        }
    }

    /// <summary>A watched lease came back: logs it when it had been reported as a leak.</summary>
    private void EndWatch(PooledChannel<TChannel> entry, LeaseWatch watch)
    {
        if (watch.Return())
        {
            Log.LeakReturned(_logger, Name, entry.Id, _timeProvider.GetElapsedTime(watch.LeasedAt));
        }
    }
}
