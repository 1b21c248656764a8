using Polly;
using Polly.CircuitBreaker;
using Polly.Retry;

namespace ChannelPool;

/// <summary>Builds the default pipeline channel opens run through, from <see cref="OpenResilienceOptions"/>.</summary>
internal static class OpenPipeline
{
    // object.MemberwiseClone, callable on any object: see ShallowCopy.
    private static readonly Func<object, object> MemberwiseCloneOf = typeof(object)
        .GetMethod(nameof(MemberwiseClone), System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.NonPublic)!
        .CreateDelegate<Func<object, object>>();

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
        var copy = ShallowCopy(retry);
        copy.ShouldHandle = args => args.Outcome.Exception is null or OperationCanceledException or BrokenCircuitException or IsolatedCircuitException
            ? ValueTask.FromResult(false)
            : shouldHandle(args);
        return copy;
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
        var copy = ShallowCopy(breaker);
        copy.StateProvider = breakerState;
        copy.OnOpened = args =>
        {
            onBreakerOpened(args.BreakDuration);
            return onOpened?.Invoke(args) ?? ValueTask.CompletedTask;
        };
        copy.OnClosed = args =>
        {
            onBreakerClosed();
            return onClosed?.Invoke(args) ?? ValueTask.CompletedTask;
        };
        return copy;
    }

    /// <summary>
    /// Copies a Polly options object whole, so the pool can set its own callbacks without touching the caller's instance
    /// (one options object may serve several pools). Polly's options have no copy constructor, and naming their
    /// properties here would drop any Polly adds; <see cref="object.MemberwiseClone"/> copies every field there is.
    /// </summary>
    internal static T ShallowCopy<T>(T options)
        where T : ResilienceStrategyOptions => (T)MemberwiseCloneOf(options);
}
