namespace ChannelPool;

/// <summary>
/// Pausing (HikariCP's <c>suspendPool</c>/<c>resumePool</c>): for a maintenance window, or a host that must not touch
/// the service for a while, the pool opens nothing and hands out no channel until it is resumed.
/// </summary>
public sealed partial class DefaultChannelPool<TChannel>
{
    /// <summary>
    /// Pauses the pool: it opens no channel and hands out none until <see cref="Resume"/>. Leases already out go on, and
    /// their channels rest in the pool when released. An acquire meanwhile fails at once with
    /// <see cref="ChannelPoolUnavailableException"/>, or waits, as <see cref="ChannelPoolOptions.AcquireWhilePaused"/>
    /// says; callers already waiting are failed in the first case.
    /// </summary>
    /// <remarks>
    /// Opens already under way finish, and their channels rest in the pool too. The cleanup timer goes on closing
    /// resting channels that expire, and clears still apply. <see cref="ChannelPoolSnapshot.IsPaused"/> says whether
    /// the pool is paused, for a script that must not pause twice.
    /// </remarks>
    /// <exception cref="InvalidOperationException">The pool is already paused; the message names the pool.</exception>
    /// <exception cref="ObjectDisposedException">The pool is draining or drained; the message names the pool.</exception>
    public void Pause()
    {
        // Two pauses are two owners of one maintenance window: the first resume would end the other's window early.
        var (paused, refused, snapshot) = _state.Pause();
        if (!paused)
        {
            throw new InvalidOperationException(
                $"Channel pool '{Name}' is already paused. Resume it first; check ChannelPoolSnapshot.IsPaused to pause only a running pool.");
        }

        Log.Paused(_logger, Name, snapshot);
        refused?.ForEach(waiter => waiter.Fail(new ChannelPoolUnavailableException(Name, snapshot)));
    }

    /// <summary>
    /// Resumes a paused pool: the callers who waited meanwhile get channels first, in order, and the pool refills.
    /// Resting channels that expired or became unusable during the pause are closed instead.
    /// </summary>
    /// <exception cref="InvalidOperationException">The pool is not paused; the message names the pool.</exception>
    /// <exception cref="ObjectDisposedException">The pool is draining or drained; the message names the pool.</exception>
    public void Resume()
    {
        var unfit = FindUnfit(_state.ParkedChannels());
        var outcome = _state.Resume(entry => unfit?.ContainsKey(entry) == true);
        if (!outcome.Resumed)
        {
            throw new InvalidOperationException(
                $"Channel pool '{Name}' is not paused, so it cannot be resumed. Check ChannelPoolSnapshot.IsPaused to resume only a paused pool.");
        }

        Log.Resumed(_logger, Name, outcome.Handed.Count, outcome.Evicted.Count, outcome.Opens);
        foreach (var entry in outcome.Evicted)
        {
            QueueClose(entry, unfit![entry]);
        }

        foreach (var (waiter, entry, slot) in outcome.Handed)
        {
            CompleteWaiter(waiter, entry, slot);
        }

        StartOpens(outcome.Opens);
    }
}
