namespace ChannelPool;

public sealed partial class ChannelPool<TChannel>
{
    private static readonly Func<object?, Task> CloseOne = static state =>
    {
        var entry = (PooledChannel<TChannel>)state!;
        return entry.Pool.CloseChannelAsync(entry);
    };

    /// <summary>
    /// The cleanup timer: retires idle channels that are past their deadline or no longer usable, so a quiet pool does
    /// not hold dead channels until the next caller trips over them.
    /// </summary>
    private void RunCleanup()
    {
        PooledChannel<TChannel>[] idle;
        using (_gate.Enter())
        {
            if (_disposed || _idle.Count == 0)
            {
                return;
            }

            idle = _idle.ToArray();
        }

        // IsUsable is the factory's code: ask it outside the lock.
        Dictionary<PooledChannel<TChannel>, EvictionReason>? doomed = null;
        foreach (var entry in idle)
        {
            var reason = _clock.HasPassedPrecise(entry.ExpiresAt) ? EvictionReason.LifetimeExpired
                : !IsUsable(entry) ? EvictionReason.Unusable
                : (EvictionReason?)null;
            if (reason is { } r)
            {
                (doomed ??= [])[entry] = r;
            }
        }

        if (doomed is null)
        {
            return;
        }

        List<PooledChannel<TChannel>> retired;
        int opens;
        using (_gate.Enter())
        {
            // Only channels still idle go; one leased meanwhile is checked again on its own lease path.
            retired = _idle.RemoveAll(doomed.ContainsKey);
            retired.ForEach(MarkClosing_NoLock);
            opens = ReserveOpens_NoLock();
        }

        foreach (var entry in retired)
        {
            Retire(entry, doomed[entry]);
        }

        StartOpens(opens);
    }

    private void MarkClosing_NoLock(PooledChannel<TChannel> entry)
    {
        entry.IsRetiring = true;
        _closingCount++;
    }

    /// <summary>Counts and logs the eviction and queues the close. The entry must already be marked closing.</summary>
    private void Retire(PooledChannel<TChannel> entry, EvictionReason reason)
    {
        RecordRetirement(entry, reason);
        _worker.Post(CloseOne, entry);
    }

    private void RecordRetirement(PooledChannel<TChannel> entry, EvictionReason reason)
    {
        entry.RetireReason = reason;
        _metrics.Evicted(reason);
        Log.ChannelRetired(_logger, Name, entry.Id, reason);
    }

    /// <summary>
    /// Closes a retired channel on the background worker: gracefully when it is healthy, so the server ends its
    /// session, and by abort when it is broken or faulted, or the graceful close fails or overruns.
    /// </summary>
    private async Task CloseChannelAsync(PooledChannel<TChannel> entry)
    {
        var graceful = !entry.IsBroken && entry.RetireReason != EvictionReason.Unusable && IsUsable(entry);
        if (graceful)
        {
            using var timeout = new CancellationTokenSource(Volatile.Read(ref _settings).CloseTimeout, _timeProvider);
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

    /// <summary>Books a closed or aborted channel out of the pool.</summary>
    private void OnChannelEnded(PooledChannel<TChannel> entry)
    {
        using (_gate.Enter())
        {
            _closingCount--;
            _closedTotal++;
            _open.Remove(entry);
            if (_disposed)
            {
                UpdateDrainProgress_NoLock();
            }
        }
    }

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

    /// <summary>Asks the factory, treating an exception as "not usable" so a faulty check cannot leak a lease.</summary>
    /// <remarks>
    /// Kept out of line on purpose: measured, a try/catch inlined into the lease and release paths cost more than this
    /// call does.
    /// </remarks>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private bool IsUsable(PooledChannel<TChannel> entry)
    {
        try
        {
            return _factory.IsUsable(entry.Channel);
        }
        catch (Exception)
        {
            return false;
        }
    }
}
