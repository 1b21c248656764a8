namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    private static readonly Func<object?, Task> CloseOne = static state =>
    {
        var entry = (PooledChannel<TChannel>)state!;
        return entry.Pool.CloseChannelAsync(entry);
    };

    /// <summary>
    /// The cleanup timer: evicts idle channels that are past their deadline or no longer usable, so a quiet pool does
    /// not hold dead channels until the next caller trips over them; then closes those a burst left idle longer than
    /// <see cref="ChannelPoolOptions.IdleTimeout"/>, down to the pool's idle target.
    /// </summary>
    private void RunCleanup()
    {
        var doomed = FindUnfit(_state.IdleChannels());
        if (doomed is not null)
        {
            var (evicted, opens) = _state.EvictIdle(doomed.ContainsKey);
            foreach (var entry in evicted)
            {
                QueueClose(entry, doomed[entry]);
            }

            StartOpens(opens);
        }

        foreach (var entry in _state.TimeOutIdle())
        {
            QueueClose(entry, EvictionReason.IdleTimeout);
        }
    }

    /// <summary>
    /// Which of <paramref name="idle"/> must not be leased again, and why: past their deadline, or unusable. Asked outside
    /// the gate, because <c>IsUsable</c> is the factory's code.
    /// </summary>
    private Dictionary<PooledChannel<TChannel>, EvictionReason>? FindUnfit(PooledChannel<TChannel>[]? idle)
    {
        Dictionary<PooledChannel<TChannel>, EvictionReason>? unfit = null;
        foreach (var entry in idle ?? [])
        {
            var reason = entry.EvictAfter <= _timeProvider.GetTimestamp() ? entry.ExpiredReason
                : !IsUsable(entry) ? EvictionReason.Unusable
                : (EvictionReason?)null;
            if (reason is { } r)
            {
                (unfit ??= [])[entry] = r;
            }
        }

        return unfit;
    }

    /// <summary>Counts and logs the eviction and queues the close. The entry must already be evicted.</summary>
    private void QueueClose(PooledChannel<TChannel> entry, EvictionReason reason)
    {
        RecordEviction(entry, reason);
        _worker.Post(CloseOne, entry);
    }

    private void RecordEviction(PooledChannel<TChannel> entry, EvictionReason reason)
    {
        entry.EvictionReason = reason;
        _metrics.Evicted(reason);
        Log.ChannelEvicted(_logger, Name, entry.Id, reason);
    }

    /// <summary>
    /// Closes an evicted channel on the background worker: gracefully when it is healthy, so the server ends its
    /// session, and by abort when it is broken or faulted, or the graceful close fails or overruns.
    /// </summary>
    private async Task CloseChannelAsync(PooledChannel<TChannel> entry)
    {
        var graceful = !entry.IsBroken && entry.EvictionReason != EvictionReason.Unusable && IsUsable(entry);
        if (graceful)
        {
            using var timeout = new CancellationTokenSource(_state.Settings.CloseTimeout, _timeProvider);
            try
            {
                await _factory.CloseAsync(entry.Channel, timeout.Token);
            }
            catch (Exception ex)
            {
                Log.CloseFailed(_logger, Name, entry.Id, ex);
                Abort(entry);
            }
        }
        else
        {
            Abort(entry);
        }

        OnChannelEnded(entry);
    }

    /// <summary>Books a closed or aborted channel out of the pool, and completes the clears that waited for it.</summary>
    private void OnChannelEnded(PooledChannel<TChannel> entry) => _state.Closed(entry)?.ForEach(static cleared => cleared.TrySetResult());

    private void Abort(PooledChannel<TChannel> entry)
    {
        try
        {
            _factory.Abort(entry.Channel);
        }
        catch (Exception ex)
        {
            // Abort must not throw; if a factory's does, the channel is gone either way.
            Log.CloseFailed(_logger, Name, entry.Id, ex);
        }
    }
}
