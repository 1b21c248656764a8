using Polly;

namespace ChannelPool.Tests.Resilience;

public class CircuitBreakerTests : PoolTestBase
{
    private DefaultChannelPool<FakeChannel> BreakerPool(Action<ChannelPoolOptions>? configure = null) => CreatePool(o =>
    {
        o.PoolSize = 2;
        o.MaxConcurrentOpens = 2;
        o.Resilience.Retry.MaxRetryAttempts = 0;
        o.Resilience.CircuitBreaker.MinimumThroughput = 2;
        o.Resilience.CircuitBreaker.FailureRatio = 0.5;
        o.Resilience.CircuitBreaker.BreakDuration = TimeSpan.FromSeconds(5);
        configure?.Invoke(o);
    });

    [Test]
    public async Task Breaker_OpensOnRepeatedOpenFailures_FailsAcquireFast_PausesOpens_AndRecovers()
    {
        Factory.OpenFailure = () => new IOException("connection refused");
        var pool = BreakerPool();

        _ = pool.WarmUpAsync(0);
        await Eventually.That(() => pool.GetSnapshot().BreakerState == BreakerState.Open, "the breaker opens");
        await UntilQuiet(pool);
        var attemptsWhenOpened = Factory.OpenAttempts;

        var acquire = pool.AcquireAsync();
        Assert.That(acquire.IsFaulted, Is.True, "an empty pool with an open breaker fails at once, not after the acquire timeout");
        var error = Assert.ThrowsAsync<ChannelPoolUnavailableException>(async () => await acquire);
        Assert.That(error!.InnerException, Is.InstanceOf<IOException>().With.Message.EqualTo("connection refused"));
        Assert.That(error.Message, Does.Contain($"Pool '{pool.Name}'").And.Contain("circuit breaker is open").And.Contain("IOException: connection refused"));
        Assert.That(error.RetryAfter, Is.Not.Null);

        Time.Advance(TimeSpan.FromSeconds(4));
        await UntilQuiet(pool);
        Assert.That(Factory.OpenAttempts, Is.EqualTo(attemptsWhenOpened), "no opens while the breaker is open");

        Factory.OpenFailure = null;
        Time.Advance(TimeSpan.FromSeconds(1));
        await UntilIdle(pool, 2);
        Assert.That(pool.GetSnapshot().BreakerState, Is.EqualTo(BreakerState.Closed));
        await using var lease = await pool.AcquireAsync().Within();
        Assert.That(lease.Channel.IsOpen, Is.True);
    }

    [Test]
    public async Task Breaker_WhileOpen_ProbesWithOneOpenPerBreakDuration()
    {
        Factory.OpenFailure = () => new IOException("connection refused");
        var pool = BreakerPool();
        _ = pool.WarmUpAsync(0);
        await Eventually.That(() => pool.GetSnapshot().BreakerState == BreakerState.Open, "the breaker opens");
        await UntilQuiet(pool);
        var attempts = Factory.OpenAttempts;

        for (var probe = 1; probe <= 3; probe++)
        {
            Time.Advance(TimeSpan.FromSeconds(5));
            await Eventually.That(() => Factory.OpenAttempts == attempts + probe, $"probe {probe} ran");
            await Eventually.That(() => pool.GetSnapshot().BreakerState == BreakerState.Open, "the failed probe reopened the breaker");
            await UntilQuiet(pool);
        }

        Assert.That(Factory.OpenAttempts, Is.EqualTo(attempts + 3), "one attempt per break duration, not a storm");
    }

    [Test]
    public async Task WaitingCallers_FailFast_WhenTheBreakerOpens()
    {
        Factory.HoldOpens();
        Factory.OpenFailure = () => new IOException("connection refused");
        var pool = BreakerPool();

        var waiting = pool.AcquireAsync().AsTask();
        Assert.That(pool.GetSnapshot().Waiting, Is.EqualTo(1));
        Factory.StopHoldingOpens();

        var error = Assert.ThrowsAsync<ChannelPoolUnavailableException>(() => waiting.Within());
        Assert.That(error!.InnerException, Is.InstanceOf<IOException>());
        Assert.That(Time.GetUtcNow(), Is.EqualTo(new FakeTimeProvider().GetUtcNow()), "no time passed: the caller did not sit out its timeout");
    }

    [Test]
    public async Task WarmUp_FailsWithTheOpenError_WhenTheBreakerOpens()
    {
        Factory.OpenFailure = () => new UnauthorizedAccessException("the server rejected the credentials");
        var pool = BreakerPool();

        var error = Assert.ThrowsAsync<ChannelPoolUnavailableException>(() => pool.WarmUpAsync().Within());

        Assert.That(error!.InnerException, Is.InstanceOf<UnauthorizedAccessException>());
        Assert.That(error.Message, Does.Contain("the server rejected the credentials"));
    }

    [Test]
    public async Task TransientOpenFailure_IsRetriedWithBackoff_OnTheBackgroundWorker()
    {
        var attempts = 0;
        Factory.OpenFailure = () => Interlocked.Increment(ref attempts) == 1 ? new IOException("connection reset") : null;
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxConcurrentOpens = 1;
            o.Resilience.Retry.MaxRetryAttempts = 3;
            o.Resilience.Retry.Delay = TimeSpan.FromSeconds(1);
        });

        var warmUp = pool.WarmUpAsync();
        await Eventually.That(() => Factory.OpenAttempts == 1, "the first attempt failed");
        Assert.That(pool.GetSnapshot().Opening, Is.EqualTo(1), "the open is still in flight, waiting to retry");

        // The retry delay is exponential with jitter, so move the clock a second at a time until the retry has run.
        for (var second = 0; second < 30 && !warmUp.IsCompleted; second++)
        {
            Time.Advance(TimeSpan.FromSeconds(1));
            await Task.WhenAny(warmUp, Task.Delay(5));
        }

        await warmUp.Within();
        Assert.That(Factory.OpenAttempts, Is.EqualTo(2));
        Assert.That(Factory.Opened, Is.EqualTo(1));
        Assert.That(Factory.Channels.Single().OpenedOnThreadName, Is.EqualTo("ChannelPool background worker"), "the retry ran on the worker too");
    }

    [Test]
    public async Task NonTransientOpenFailure_IsNotRetried()
    {
        Factory.OpenFailure = () => new UnauthorizedAccessException("bad credentials");
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxConcurrentOpens = 1;
            o.Resilience.Retry.MaxRetryAttempts = 3;
            o.Resilience.CircuitBreaker.MinimumThroughput = 10;
            o.Resilience.Retry.ShouldHandle = args => ValueTask.FromResult(args.Outcome.Exception is not UnauthorizedAccessException);
        });

        _ = pool.WarmUpAsync(0);

        await Eventually.That(() => Factory.OpenAttempts == 1 && pool.GetSnapshot().Opening == 0, "the open ended after its first attempt");
    }

    [Test]
    public async Task AcquireTimeout_WhileOpensFail_NamesTheOpenError()
    {
        Factory.OpenFailure = () => new IOException("connection refused");
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxConcurrentOpens = 1;
            o.AcquireTimeout = TimeSpan.FromSeconds(10);
            o.Resilience.CircuitBreaker.MinimumThroughput = 1000;
        });

        var waiting = pool.AcquireAsync().AsTask();
        await Eventually.That(() => Factory.OpenAttempts >= 1 && pool.GetSnapshot().Opening == 0, "an open failed");
        Time.Advance(TimeSpan.FromSeconds(10));

        var error = Assert.ThrowsAsync<ChannelPoolTimeoutException>(() => waiting.Within());
        Assert.That(error!.Message, Does.Contain("Opening new channels is failing: IOException: connection refused"));
        Assert.That(error.InnerException, Is.InstanceOf<IOException>());
    }

    [Test]
    public async Task FailedOpen_TheBreakerLetThrough_IsFollowedByAPause_NotByTheNextOpenAtOnce()
    {
        // What the pipeline cannot do: once it gives up on an open and its breaker stays closed, the next open is the
        // pool's decision. Without the pool's own backoff the refill would start it at once, in a tight loop.
        Factory.OpenFailure = () => new IOException("connection refused");
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxConcurrentOpens = 1;
            o.Resilience.CircuitBreaker.MinimumThroughput = 1000;
            o.Resilience.Retry.Delay = TimeSpan.FromSeconds(1);
        });

        _ = pool.WarmUpAsync(0);
        // The failed open's slot is freed and the next open reserved under one lock: seeing none in flight after the
        // failure means the pool chose to wait.
        await Eventually.That(() => Factory.OpenAttempts == 1 && pool.GetSnapshot().Opening == 0, "the first open failed and none followed");

        Time.Advance(TimeSpan.FromSeconds(1));
        await Eventually.That(() => Factory.OpenAttempts == 2 && pool.GetSnapshot().Opening == 0, "the second open ran after one base delay");
        Time.Advance(TimeSpan.FromSeconds(1));
        Assert.That(pool.GetSnapshot().Opening, Is.EqualTo(0), "the backoff doubled after the second failure");
        Assert.That(Factory.OpenAttempts, Is.EqualTo(2));

        Time.Advance(TimeSpan.FromSeconds(1));
        await Eventually.That(() => Factory.OpenAttempts == 3, "the third open ran after twice the base delay");
        Assert.That(pool.GetSnapshot().BreakerState, Is.EqualTo(BreakerState.Closed));
    }

    [Test]
    public async Task CustomOpenPipeline_IsUsed_AndItsBreakerStopsTheRefill()
    {
        var retries = 0;
        var pipeline = new ResiliencePipelineBuilder { TimeProvider = Time }
            .AddRetry(new()
            {
                MaxRetryAttempts = 1,
                Delay = TimeSpan.Zero,
                ShouldHandle = args => ValueTask.FromResult(args.Outcome.Exception is IOException),
                OnRetry = _ =>
                {
                    Interlocked.Increment(ref retries);
                    return ValueTask.CompletedTask;
                },
            })
            .AddCircuitBreaker(new() { MinimumThroughput = 2, FailureRatio = 0.5, BreakDuration = TimeSpan.FromSeconds(5) })
            .Build();
        Factory.OpenFailure = () => new IOException("connection refused");
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxConcurrentOpens = 1;
            o.OpenPipeline = pipeline;
        });

        _ = pool.WarmUpAsync(0);
        for (var i = 0; i < 10 && pool.GetSnapshot().BreakerState != BreakerState.Open; i++)
        {
            await UntilQuiet(pool);
            Time.Advance(TimeSpan.FromSeconds(1));
        }

        Assert.That(retries, Is.GreaterThanOrEqualTo(1), "the custom pipeline's retry ran");
        Assert.That(pool.GetSnapshot().BreakerState, Is.EqualTo(BreakerState.Open));
        Assert.ThrowsAsync<ChannelPoolUnavailableException>(async () => await pool.AcquireAsync());
    }
}
