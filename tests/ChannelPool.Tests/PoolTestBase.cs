using System.Diagnostics.Metrics;
using Microsoft.Extensions.Logging;

namespace ChannelPool.Tests;

/// <summary>
/// Gives each test a fake clock, a fake factory and pools that are drained after the test, so a failing test cannot
/// leave background work running into the next one.
/// </summary>
public abstract class PoolTestBase
{
    private readonly List<DefaultChannelPool<FakeChannel>> _pools = [];

    protected FakeTimeProvider Time { get; private set; } = null!;

    protected FakeChannelFactory Factory { get; private set; } = null!;

    [SetUp]
    public void CreateFakes()
    {
        Time = new FakeTimeProvider();
        Factory = new FakeChannelFactory();
    }

    [TearDown]
    public async Task DrainPools()
    {
        Factory.StopHoldingOpens();
        foreach (var pool in _pools)
        {
            var drain = pool.DrainAsync();

            // Drain waits (in fake time) for leases a failed test left behind; move the clock so it can finish.
            while (!drain.IsCompleted)
            {
                Time.Advance(TimeSpan.FromSeconds(1));
                await Task.WhenAny(drain, Task.Delay(1));
            }

            await drain;
        }

        _pools.Clear();
    }

    /// <summary>Options for small, fast pools: no jitter unless a test asks, quick retries, a short breaker window.</summary>
    protected static ChannelPoolOptions SmallPool(int poolSize = 4, int maxChannels = 8) => new()
    {
        Name = TestContext.CurrentContext.Test.Name,
        PoolSize = poolSize,
        MaxChannels = maxChannels,
        LifetimeJitter = 0,
        Resilience = { Retry = { MaxRetryAttempts = 0, Delay = TimeSpan.FromMilliseconds(100) } },
    };

    /// <summary>A pool on <see cref="Time"/>, or on a clock of the test's own, which teardown cannot move.</summary>
    protected DefaultChannelPool<FakeChannel> CreatePool(ChannelPoolOptions options, TimeProvider? time = null, IMeterFactory? meterFactory = null) =>
        CreatePool(Factory, options, time, meterFactory);

    /// <summary>A pool over a factory of the test's own, usually one that wraps <see cref="Factory"/>.</summary>
    protected DefaultChannelPool<FakeChannel> CreatePool(
        IPooledChannelFactory<FakeChannel> factory, ChannelPoolOptions options, TimeProvider? time = null, IMeterFactory? meterFactory = null, ILoggerFactory? loggerFactory = null)
    {
        var pool = new DefaultChannelPool<FakeChannel>(factory, options, time ?? Time, loggerFactory, meterFactory);
        _pools.Add(pool);
        return pool;
    }

    protected DefaultChannelPool<FakeChannel> CreatePool(Action<ChannelPoolOptions>? configure = null)
    {
        var options = SmallPool();
        configure?.Invoke(options);
        return CreatePool(options);
    }

    protected static Task UntilIdle(DefaultChannelPool<FakeChannel> pool, int idle) =>
        Eventually.That(() => pool.GetSnapshot().Idle == idle, () => $"{idle} channels are idle (now {pool.GetSnapshot()})");

    protected static Task UntilQuiet(DefaultChannelPool<FakeChannel> pool) =>
        Eventually.That(
            () => pool.GetSnapshot() is { Opening: 0, Closing: 0 },
            () => $"no open or close is in flight (now {pool.GetSnapshot()})");
}
