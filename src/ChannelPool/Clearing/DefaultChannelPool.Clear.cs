namespace ChannelPool;

/// <summary>
/// Clearing, or soft eviction (HikariCP's <c>softEvictConnections</c>, Npgsql's <c>ClearPool</c>): every channel opened
/// before the clear retires, and the pool goes on serving with new ones. On request, or when an open or a call fails
/// with an error <see cref="ChannelPoolOptions.IsFatalError"/> calls fatal.
/// </summary>
public sealed partial class DefaultChannelPool<TChannel>
{
    /// <summary>
    /// Retires every channel opened before this call, for example after the service's certificate was replaced, a
    /// failover, or a new deployment of the service: idle channels close now, gracefully, in the background; leased
    /// channels close when their leases end, and calls on them finish first; opens already under way are closed as they
    /// land. The pool keeps serving and refills with new channels at once.
    /// </summary>
    /// <remarks>
    /// The clear is in force when this method returns: no lease begun after it gets a retired channel. Only the waiting
    /// for the closes is asynchronous, and a lease that is never released keeps it waiting: pass a token to bound it.
    /// Calling it again, or while a clear is under way, retires whatever opened since.
    /// </remarks>
    /// <param name="cancellationToken">Stops the wait for the closes; the clear itself stays in force.</param>
    /// <returns>A task that completes when every channel the clear retired has closed.</returns>
    /// <exception cref="ObjectDisposedException">The pool is draining or drained; the message names the pool.</exception>
    public Task ClearAsync(CancellationToken cancellationToken = default)
    {
        var outcome = _state.Clear();
        Log.Cleared(_logger, Name, outcome.Idle.Count, outcome.Leased);
        ActOnClear(outcome, fatalError: false);
        return outcome.Done.WaitAsync(cancellationToken);
    }

    /// <summary>
    /// Clears the pool when <paramref name="error"/>, which an open attempt or a channel of <paramref name="generation"/>
    /// failed with, is fatal by the pool's rule: every channel of that generation or older retires, once.
    /// </summary>
    private void ClearIfFatal(long generation, Exception? error)
    {
        if (error is null || !IsFatal(error) || _state.ClearAfterFatalError(generation) is not { } outcome)
        {
            return;
        }

        Log.ClearedAfterFatalError(_logger, Name, error.GetType().Name, outcome.Idle.Count, outcome.Leased, error);
        ActOnClear(outcome, fatalError: true);
    }

    private void ActOnClear(PoolState<TChannel>.ClearOutcome outcome, bool fatalError)
    {
        _metrics.Cleared(fatalError);
        try
        {
            _factory.Renew();
        }
        catch (Exception ex)
        {
            // The clear stands; the new channels share the old factory's state, as before a factory could renew.
            Log.RenewFailed(_logger, Name, ex);
        }

        foreach (var entry in outcome.Idle)
        {
            QueueClose(entry, EvictionReason.Cleared);
        }

        StartOpens(outcome.Opens);
    }

    /// <summary>Asks the fatal-error rule; a rule that throws is logged as the bug it is, and the error counts as not fatal.</summary>
    private bool IsFatal(Exception error)
    {
        if (_state.Settings.IsFatalError is not { } rule)
        {
            return false;
        }

        try
        {
            return rule(error);
        }
        catch (Exception ruleError)
        {
            Log.FatalErrorRuleFailed(_logger, Name, error.GetType().Name, ruleError);
            return false;
        }
    }

    /// <summary>The factory's word on why a channel is unusable, if it has one; a factory that throws has none.</summary>
    private Exception? GetFailure(PooledChannel<TChannel> entry)
    {
        try
        {
            return _factory.GetFailure(entry.Channel);
        }
        catch (Exception)
        {
            return null;
        }
    }
}
