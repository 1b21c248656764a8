namespace ChannelPool;

// New settings for a running pool.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>
    /// New settings apply: deadlines of open channels move with the lifetime, and a pool whose idle target is above its open
    /// and opening channels refills now. Returns opens to start.
    /// </summary>
    /// <exception cref="ObjectDisposedException">A drain began.</exception>
    public int Reconfigure(PoolSettings settings)
    {
        _gate.Enter();
        if (_disposed)
        {
            _gate.Exit();
            throw new ObjectDisposedException(typeof(DefaultChannelPool<TChannel>).FullName, $"Channel pool '{_poolName}' is disposed.");
        }

        Volatile.Write(ref _settings, settings);
        FollowIdleTargetSettings_NoLock(settings);
        FollowSharingSettings_NoLock(settings);
        foreach (var entry in _open)
        {
            RescheduleExpiry_NoLock(entry);
        }

        var opens = Refill_NoLock(toPoolSize: _idle.Count + _leasedCount + _openingCount < _idleTarget);
        Exit(nameof(Reconfigure));
        return opens;
    }
}
