namespace ChannelPool;

// The idle target: fixed at PoolSize, or adaptive, following demand (IdleTarget/IdleTargetController.cs).
internal sealed partial class PoolState<TChannel>
{
    /// <summary>
    /// The adaptive target's tick: the demand seen since the last one closes a bucket of its window, the target moves
    /// (up at once, down by its half-life; held while the breaker, a backoff or a pause stops opens), and the refill
    /// follows the new threshold. Returns the move and opens to start; nothing when the target is fixed or a drain began.
    /// </summary>
    public IdleTargetMove FollowDemand()
    {
        _gate.Enter();
        if (_disposed || _adaptiveTarget is not { } adaptive)
        {
            _gate.Exit();
            return default;
        }

        // While paused, the waiting callers are what the pause holds back, not demand: the target stands still, and the
        // peak seen before the pause is kept (waiters never enter it) for the first tick after the resume to record.
        var from = _idleTarget;
        var hold = _opensPaused || _paused || BreakerState != BreakerState.Closed;
        SetIdleTarget_NoLock(adaptive.Tick(_peakDemand, _usedUp, hold));
        _peakDemand = _paused ? Math.Max(_peakDemand, _leasedCount) : Demand_NoLock();
        _usedUp = 0;
        var move = new IdleTargetMove(from, _idleTarget, adaptive.WindowPeak, adaptive.Flow, Refill_NoLock());
        Exit(nameof(FollowDemand));
        return move;
    }

    /// <summary>Channels in use: leased, and enough for the waiting callers, several to a channel when leases share.</summary>
    private int Demand_NoLock()
    {
        var perChannel = ShareLimit_NoLock();
        return _leasedCount + ((_waiters.Count + perChannel - 1) / perChannel);
    }

    private void SetIdleTarget_NoLock(int target)
    {
        Volatile.Write(ref _idleTarget, target);
        Volatile.Write(ref _refillThreshold, _settings.RefillThresholdFor(target));
    }

    /// <summary>Follows the idle target's settings: PoolSize when fixed; a controller, kept across reloads, when adaptive.</summary>
    private void FollowIdleTargetSettings_NoLock(PoolSettings settings)
    {
        if (settings.IdleTarget.Mode == IdleTargetMode.Fixed)
        {
            _adaptiveTarget = null;
            SetIdleTarget_NoLock(settings.PoolSize);
            return;
        }

        var target = _adaptiveTarget?.Reconfigure(settings.IdleTarget, settings.MaxChannels);
        if (target is null)
        {
            _adaptiveTarget = new IdleTargetController(settings.IdleTarget, settings.MaxChannels, settings.PoolSize, _timeProvider);
            target = _adaptiveTarget.Target;
        }

        SetIdleTarget_NoLock(target.Value);
    }
}

/// <summary>What <see cref="PoolState{TChannel}.FollowDemand"/> decided: the target before and after, what it followed, and opens.</summary>
internal readonly record struct IdleTargetMove(int From, int To, int WindowPeak, double Flow, int Opens);
