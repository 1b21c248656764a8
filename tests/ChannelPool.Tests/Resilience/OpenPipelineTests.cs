using Polly;
using Polly.CircuitBreaker;
using Polly.Retry;

namespace ChannelPool.Tests.Resilience;

public class OpenPipelineTests
{
    [Test]
    public void BuildingAPipeline_LeavesTheCallersPollyOptionsUntouched()
    {
        // One options object may serve several pools, so the pool's callbacks go on copies, never on the caller's.
        var options = new OpenResilienceOptions();
        var shouldRetry = options.Retry.ShouldHandle;
        Func<OnCircuitOpenedArguments<object>, ValueTask> onOpened = _ => ValueTask.CompletedTask;
        options.CircuitBreaker.OnOpened = onOpened;

        OpenPipeline.Build(options, "pool", TimeProvider.System, new CircuitBreakerStateProvider(), _ => { }, () => { });

        Assert.That(options.Retry.ShouldHandle, Is.SameAs(shouldRetry));
        Assert.That(options.CircuitBreaker.OnOpened, Is.SameAs(onOpened));
        Assert.That(options.CircuitBreaker.StateProvider, Is.Null);
        Assert.That(options.CircuitBreaker.OnClosed, Is.Null);
    }

    [Test]
    public void ThePoolsCopyOfPollysOptions_CarriesEveryPropertyPollyHas()
    {
        // Every public property, by reflection, so a property a later Polly adds is checked without naming it here.
        var retry = new RetryStrategyOptions
        {
            Name = "retry",
            MaxRetryAttempts = 7,
            BackoffType = DelayBackoffType.Linear,
            UseJitter = true,
            Delay = TimeSpan.FromSeconds(3),
            MaxDelay = TimeSpan.FromSeconds(9),
            DelayGenerator = _ => ValueTask.FromResult<TimeSpan?>(TimeSpan.FromSeconds(1)),
            OnRetry = _ => ValueTask.CompletedTask,
            Randomizer = () => 0.5,
        };
        var breaker = new CircuitBreakerStrategyOptions
        {
            Name = "breaker",
            FailureRatio = 0.3,
            MinimumThroughput = 7,
            SamplingDuration = TimeSpan.FromSeconds(11),
            BreakDuration = TimeSpan.FromSeconds(13),
            BreakDurationGenerator = _ => ValueTask.FromResult(TimeSpan.FromSeconds(2)),
            ManualControl = new CircuitBreakerManualControl(),
            StateProvider = new CircuitBreakerStateProvider(),
            OnOpened = _ => ValueTask.CompletedTask,
            OnClosed = _ => ValueTask.CompletedTask,
            OnHalfOpened = _ => ValueTask.CompletedTask,
        };

        AssertCopiedWhole(retry, OpenPipeline.ShallowCopy(retry));
        AssertCopiedWhole(breaker, OpenPipeline.ShallowCopy(breaker));
    }

    private static void AssertCopiedWhole<T>(T original, T copy)
        where T : class
    {
        Assert.That(copy, Is.Not.SameAs(original));
        foreach (var property in typeof(T).GetProperties().Where(p => p.CanRead && p.GetIndexParameters().Length == 0))
        {
            Assert.That(property.GetValue(copy), Is.EqualTo(property.GetValue(original)), $"{typeof(T).Name}.{property.Name}");
        }
    }
}
