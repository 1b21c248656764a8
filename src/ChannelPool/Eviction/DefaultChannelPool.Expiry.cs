namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    /// <summary>
    /// The expiry timer ticks at the cached clock's resolution (a sixty-fourth of the lifetime, 10 ms to 1 s). A tick
    /// before the next replacement or deadline reads one field and returns; the cleanup timer, with its usability probe,
    /// runs apart from it, as before.
    /// </summary>
    private ITimer CreateExpiryTimer(TimeSpan channelLifetime)
    {
        var period = PoolClock.ResolutionFor(channelLifetime);
        return _timeProvider.CreateTimer(static state => ((DefaultChannelPool<TChannel>)state!).RunExpiry(), this, period, period);
    }

    private void RescheduleExpiry(TimeSpan channelLifetime)
    {
        var period = PoolClock.ResolutionFor(channelLifetime);
        _expiryTimer.Change(period, period);
    }

    /// <summary>Evicts idle channels at their deadline and opens replacements before it (<see cref="PoolState{TChannel}.Expire"/>).</summary>
    private void RunExpiry()
    {
        if (_timeProvider.GetTimestamp() < _state.NextExpiryCheck)
        {
            return;
        }

        var (expired, opens) = _state.Expire();
        foreach (var entry in expired ?? [])
        {
            QueueClose(entry, EvictionReason.LifetimeExpired);
        }

        StartOpens(opens);
    }
}
