using Polly;
using Polly.CircuitBreaker;
using Polly.Retry;

namespace ChannelPool;

/// <summary>Builds the default pipeline channel opens run through.</summary>
internal static class OpenPipeline
{
    /// <summary>
    /// Outermost first: total timeout, retry (exponential backoff with jitter), circuit breaker, attempt timeout. The
    /// breaker sits inside the retry so every attempt counts towards it, and the retry never retries a rejection by
    /// the breaker: that is what lets the pool stop, rather than hammer a server that is down.
    /// </summary>
    public static ResiliencePipeline Build(
        OpenResilienceOptions options,
        string poolName,
        TimeProvider timeProvider,
        CircuitBreakerStateProvider breakerState,
        Action<TimeSpan> onBreakerOpened,
        Action onBreakerClosed)
    {
        var builder = new ResiliencePipelineBuilder
        {
            Name = "ChannelPool.Open",
            InstanceName = poolName,
            TimeProvider = timeProvider,
        };

        builder.AddTimeout(options.TotalTimeout);

        if (options.MaxRetryAttempts > 0)
        {
            var shouldRetry = options.ShouldRetry;
            builder.AddRetry(new RetryStrategyOptions
            {
                MaxRetryAttempts = options.MaxRetryAttempts,
                Delay = options.RetryBaseDelay,
                BackoffType = DelayBackoffType.Exponential,
                UseJitter = true,
                ShouldHandle = args => ValueTask.FromResult(IsRetryable(args.Outcome.Exception, shouldRetry)),
            });
        }

        builder.AddCircuitBreaker(new CircuitBreakerStrategyOptions
        {
            FailureRatio = options.BreakerFailureRatio,
            MinimumThroughput = options.BreakerMinimumThroughput,
            SamplingDuration = options.BreakerSamplingDuration,
            BreakDuration = options.BreakerBreakDuration,
            StateProvider = breakerState,
            ShouldHandle = args => ValueTask.FromResult(args.Outcome.Exception is not null and not OperationCanceledException),
            OnOpened = args =>
            {
                onBreakerOpened(args.BreakDuration);
                return ValueTask.CompletedTask;
            },
            OnClosed = _ =>
            {
                onBreakerClosed();
                return ValueTask.CompletedTask;
            },
        });

        builder.AddTimeout(options.AttemptTimeout);
        return builder.Build();
    }

    private static bool IsRetryable(Exception? error, Func<Exception, bool>? shouldRetry) => error switch
    {
        null => false,
        OperationCanceledException => false,
        BrokenCircuitException or IsolatedCircuitException => false,
        _ => shouldRetry?.Invoke(error) ?? true,
    };
}
