using System.Diagnostics;
using Polly;

namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    private const string OpenOperationKey = "channelpool.open";
    private static readonly Func<object?, Task> OpenOne = static state => ((DefaultChannelPool<TChannel>)state!).OpenOneAsync();

    // Written by whichever open attempt failed last; read for error messages.
    private Exception? _lastOpenError;
    private long _nextChannelId;

    /// <summary>Fills the pool to <see cref="ChannelPoolOptions.PoolSize"/> and waits until all of it is open.</summary>
    /// <param name="cancellationToken">Stops the wait; the pool goes on filling in the background.</param>
    /// <returns>A task that completes when <see cref="ChannelPoolOptions.PoolSize"/> channels are open.</returns>
    /// <exception cref="ChannelPoolUnavailableException">The breaker opened before enough channels were open.</exception>
    public Task WarmUpAsync(CancellationToken cancellationToken = default) =>
        WarmUpAsync(_state.Settings.PoolSize, cancellationToken);

    /// <summary>
    /// Starts filling the pool to <see cref="ChannelPoolOptions.PoolSize"/> on the background worker and waits until
    /// <paramref name="readyChannels"/> channels are open: pass 0 not to wait at all.
    /// </summary>
    /// <param name="readyChannels">How many open channels to wait for, from 0 to <see cref="ChannelPoolOptions.PoolSize"/>.</param>
    /// <param name="cancellationToken">Stops the wait; the pool goes on filling in the background.</param>
    /// <returns>A task that completes when <paramref name="readyChannels"/> channels are open.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="readyChannels"/> is negative or above the pool size.</exception>
    /// <exception cref="ChannelPoolUnavailableException">The breaker opened before enough channels were open.</exception>
    public Task WarmUpAsync(int readyChannels, CancellationToken cancellationToken = default)
    {
        var poolSize = _state.Settings.PoolSize;
        if (readyChannels < 0 || readyChannels > poolSize)
        {
            throw new ArgumentOutOfRangeException(
                nameof(readyChannels), readyChannels, $"Must be between 0 and the pool size ({poolSize}) of pool '{Name}'.");
        }

        // Warm-up fills to PoolSize whatever the threshold says.
        var (opens, done) = _state.WarmUp(readyChannels);
        StartOpens(opens);
        return done is null ? Task.CompletedTask : done.Task.WaitAsync(cancellationToken);
    }

    private void PostOpens(int count)
    {
        Log.OpensStarted(_logger, Name, count);
        for (var i = 0; i < count; i++)
        {
            _worker.Post(OpenOne, this);
        }
    }

    /// <summary>
    /// One open through the resilience pipeline. Runs on the background worker and never throws.
    /// </summary>
    private async Task OpenOneAsync()
    {
        var startedAt = _timeProvider.GetTimestamp();

        // Continuing on the captured context keeps retries and their delays on the low-priority worker.
        var context = ResilienceContextPool.Shared.Get(OpenOperationKey, continueOnCapturedContext: true, _shutdown.Token);
        (TChannel Channel, long Id, long Generation) opened;
        try
        {
            opened = await _openPipeline.ExecuteAsync(
                static (ctx, pool) => pool.OpenAttemptAsync(ctx.CancellationToken), context, this);
        }
        catch (Exception ex)
        {
            OnOpenFailed(ex);
            return;
        }
        finally
        {
            ResilienceContextPool.Shared.Return(context);
        }

        var openTime = _timeProvider.GetElapsedTime(startedAt);
        _metrics.RecordCreateTime(openTime);
        OnOpenSucceeded(opened.Channel, opened.Id, opened.Generation, openTime);
    }

    /// <summary>
    /// One attempt: a span, the factory call, and the failure bookkeeping the breaker, error messages and the fatal-error
    /// rule need. The attempt belongs to the clear generation in force when it begins.
    /// </summary>
    private async ValueTask<(TChannel Channel, long Id, long Generation)> OpenAttemptAsync(CancellationToken cancellationToken)
    {
        var id = Interlocked.Increment(ref _nextChannelId);
        var generation = _state.Generation;
        using var activity = ChannelPoolTelemetry.ActivitySource.StartActivity(ChannelPoolTelemetry.OpenActivityName, ActivityKind.Client);
        activity?.SetTag(ChannelPoolTelemetry.PoolNameTag, Name);
        activity?.SetTag(ChannelPoolTelemetry.ChannelIdTag, id);
        try
        {
            var channel = await _factory.OpenAsync(cancellationToken)
                ?? throw new InvalidOperationException($"The channel factory {_factory.GetType().Name} of pool '{Name}' returned null from OpenAsync.");
            return (channel, id, generation);
        }
        catch (Exception ex) when (!_shutdown.IsCancellationRequested)
        {
            // A cancelled attempt that is not a shutdown is the attempt timeout: say so, rather than "a task was cancelled".
            var error = ex is OperationCanceledException
                ? new TimeoutException($"Opening a channel for pool '{Name}' did not finish within the attempt timeout.", ex)
                : ex;
            Volatile.Write(ref _lastOpenError, error);
            _metrics.OpenFailed(error);
            activity?.SetStatus(ActivityStatusCode.Error, error.Message);
            activity?.SetTag(ChannelPoolTelemetry.ErrorTypeTag, error.GetType().FullName);
            activity?.AddException(error);
            Log.OpenAttemptFailed(_logger, Name, error);
            _endpoint?.OpenFailed(error);
            ClearIfFatal(generation, error);
            throw;
        }
    }

    private void OnOpenSucceeded(TChannel channel, long id, long generation, TimeSpan openTime)
    {
        var entry = new PooledChannel<TChannel>(
            this, id, channel, generation, _timeProvider.GetTimestamp(), Random.Shared.NextDouble(), _state.Settings.MaxLeasesPerChannel);
        var outcome = _state.Opened(entry, openTime);
        _endpoint?.Opened();
        if (outcome.Evicted is { } reason)
        {
            // Finished after the drain began, or after a clear that came while it was opening.
            QueueClose(entry, reason);
            StartOpens(outcome.Opens);
            return;
        }

        if (outcome.Waiter is { } waiter)
        {
            _metrics.AwaitedOpen(1 + (outcome.Joiners?.Count ?? 0));
            CompleteWaiter(waiter, entry, slot: 0);
        }

        CompleteJoiners(entry, outcome.Joiners);
        outcome.WarmedUp?.ForEach(static done => done.TrySetResult());
        StartOpens(outcome.Opens);
    }
}
