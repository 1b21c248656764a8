namespace ChannelPool;

/// <summary>
/// The adaptive idle target's clock. <see cref="PoolState{TChannel}"/> decides (its <see cref="IdleTargetController"/>);
/// this file ticks it an eighth of its window apart while the target is adaptive, logs a move, and starts the opens a
/// risen target asks for.
/// </summary>
public sealed partial class DefaultChannelPool<TChannel>
{
    private ITimer CreateIdleTargetTimer(PoolSettings settings)
    {
        var period = IdleTargetTickPeriod(settings);
        return _timeProvider.CreateTimer(static state => ((DefaultChannelPool<TChannel>)state!).FollowDemand(), this, period, period);
    }

    /// <summary>Ticks as the new settings say: every eighth of the window when adaptive, never when fixed.</summary>
    private void RescheduleIdleTarget(PoolSettings settings)
    {
        var period = IdleTargetTickPeriod(settings);
        _idleTargetTimer.Change(period, period);
    }

    private void FollowDemand()
    {
        var move = _state.FollowDemand();
        if (move.From != move.To)
        {
            Log.IdleTargetMoved(_logger, Name, move.From, move.To, move.WindowPeak, Math.Round(move.Flow, 1));
        }

        StartOpens(move.Opens);
    }

    private static TimeSpan IdleTargetTickPeriod(PoolSettings settings) =>
        settings.IdleTarget.Mode == IdleTargetMode.Adaptive ? settings.IdleTarget.TickPeriod : Timeout.InfiniteTimeSpan;
}
