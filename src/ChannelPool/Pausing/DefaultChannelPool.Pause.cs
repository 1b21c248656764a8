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
    /// Idempotent, as a maintenance script that retries expects: pausing a paused pool changes nothing and returns
    /// <see langword="false"/>. Opens already under way finish, and their channels rest in the pool too. The cleanup
    /// timer goes on closing resting channels that expire, and clears still apply.
    /// </remarks>
    /// <returns><see langword="true"/> when this call paused the pool; <see langword="false"/> when it already was.</returns>
    /// <exception cref="ObjectDisposedException">The pool is draining or drained; the message names the pool.</exception>
    public bool Pause()
    {
        var (paused, refused, snapshot) = _state.Pause();
        if (!paused)
        {
            Log.PauseUnchanged(_logger, Name, "pause", "paused");
            return false;
        }

        Log.Paused(_logger, Name, snapshot);
        refused?.ForEach(waiter => waiter.Fail(new ChannelPoolUnavailableException(Name, snapshot)));
        return true;
    }

    /// <summary>
    /// Resumes a paused pool: the callers who waited meanwhile get channels first, in order, and the pool refills.
    /// Resting channels that expired or became unusable during the pause are closed instead.
    /// </summary>
    /// <remarks>Idempotent: resuming a pool that is not paused changes nothing and returns <see langword="false"/>.</remarks>
    /// <returns><see langword="true"/> when this call resumed the pool; <see langword="false"/> when it was not paused.</returns>
    /// <exception cref="ObjectDisposedException">The pool is draining or drained; the message names the pool.</exception>
    public bool Resume()
    {
        var unfit = FindUnfit(_state.ParkedChannels());
        var outcome = _state.Resume(entry => unfit?.ContainsKey(entry) == true);
        if (!outcome.Resumed)
        {
            Log.PauseUnchanged(_logger, Name, "resume", "running");
            return false;
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
        return true;
    }
}
