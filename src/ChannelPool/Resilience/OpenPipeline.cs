using Polly;
using Polly.CircuitBreaker;
using Polly.Retry;

namespace ChannelPool;

/// <summary>Builds the default pipeline channel opens run through, from <see cref="OpenResilienceOptions"/>.</summary>
internal static class OpenPipeline
{
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
        if (options.Retry.MaxRetryAttempts != 0)
        {
            builder.AddRetry(WithPoolRules(options.Retry));
        }

        builder.AddCircuitBreaker(WithPoolCallbacks(options.CircuitBreaker, breakerState, onBreakerOpened, onBreakerClosed));
        builder.AddTimeout(options.AttemptTimeout);
        return builder.Build();
    }

    /// <summary>A copy whose predicate never retries cancellation or a rejection by the breaker, whatever the caller's says.</summary>
    private static RetryStrategyOptions WithPoolRules(RetryStrategyOptions retry)
    {
        var shouldHandle = retry.ShouldHandle;
        return new RetryStrategyOptions
        {
            Name = retry.Name,
            MaxRetryAttempts = retry.MaxRetryAttempts,
            BackoffType = retry.BackoffType,
            UseJitter = retry.UseJitter,
            Delay = retry.Delay,
            MaxDelay = retry.MaxDelay,
            DelayGenerator = retry.DelayGenerator,
            OnRetry = retry.OnRetry,
            Randomizer = retry.Randomizer,
            ShouldHandle = args => args.Outcome.Exception is null or OperationCanceledException or BrokenCircuitException or IsolatedCircuitException
                ? ValueTask.FromResult(false)
                : shouldHandle(args),
        };
    }

    /// <summary>A copy that reports its state to the pool; callbacks set in the options still run.</summary>
    private static CircuitBreakerStrategyOptions WithPoolCallbacks(
        CircuitBreakerStrategyOptions breaker,
        CircuitBreakerStateProvider breakerState,
        Action<TimeSpan> onBreakerOpened,
        Action onBreakerClosed)
    {
        var onOpened = breaker.OnOpened;
        var onClosed = breaker.OnClosed;
        return new CircuitBreakerStrategyOptions
        {
            Name = breaker.Name,
            FailureRatio = breaker.FailureRatio,
            MinimumThroughput = breaker.MinimumThroughput,
            SamplingDuration = breaker.SamplingDuration,
            BreakDuration = breaker.BreakDuration,
            BreakDurationGenerator = breaker.BreakDurationGenerator,
            ShouldHandle = breaker.ShouldHandle,
            ManualControl = breaker.ManualControl,
            OnHalfOpened = breaker.OnHalfOpened,
            StateProvider = breakerState,
            OnOpened = args =>
            {
                onBreakerOpened(args.BreakDuration);
                return onOpened?.Invoke(args) ?? ValueTask.CompletedTask;
            },
            OnClosed = args =>
            {
                onBreakerClosed();
                return onClosed?.Invoke(args) ?? ValueTask.CompletedTask;
            },
        };
    }
}
