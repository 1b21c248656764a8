namespace ChannelPool.Tests.Opening;

public class WarmUpTests : PoolTestBase
{
    [Test]
    public async Task WarmUp_FillsPoolToPoolSize_OnLowPriorityBackgroundThreads()
    {
        var pool = CreatePool(o => o.PoolSize = 6);
        var callerThread = Environment.CurrentManagedThreadId;

        await pool.WarmUpAsync().Within();

        Assert.That(pool.GetSnapshot().Idle, Is.EqualTo(6));
        Assert.That(Factory.Channels, Has.Count.EqualTo(6));
        Assert.That(Factory.Channels, Has.All.Matches<FakeChannel>(c =>
            c.OpenedOnThreadId != callerThread
            && c.OpenedOnThreadName == "ChannelPool background worker"
            && c.OpenedAtPriority == ThreadPriority.BelowNormal
            && !c.OpenedOnThreadPoolThread));
    }

    [Test]
    public async Task WarmUp_OnLinux_RunsOpensAtARaisedNiceValue()
    {
        Assume.That(OperatingSystem.IsLinux(), "Thread niceness is a Linux notion.");
        var pool = CreatePool(o => o.PoolSize = 2);

        await pool.WarmUpAsync().Within();

        var callerNice = LinuxThread.CurrentNiceValue();
        Assert.That(
            Factory.Channels,
            Has.All.Matches<FakeChannel>(c => c.OpenedAtNiceValue > callerNice),
            () => $"opened at nice {string.Join(", ", Factory.Channels.Select(c => c.OpenedAtNiceValue))}; the test's thread at {callerNice}");
    }

    [Test]
    public async Task WarmUp_WithZeroReady_ReturnsAtOnce_AndFillsInTheBackground()
    {
        Factory.HoldOpens();
        var pool = CreatePool(o =>
        {
            o.PoolSize = 6;
            o.MaxConcurrentOpens = 2;
        });

        var warmUp = pool.WarmUpAsync(readyChannels: 0);

        Assert.That(warmUp.IsCompletedSuccessfully, Is.True);
        await Eventually.That(() => Factory.OpensInFlight == 2, "two opens are in flight");
        Assert.That(pool.GetSnapshot().Opening, Is.EqualTo(2), "MaxConcurrentOpens bounds the opens in flight");

        Factory.StopHoldingOpens();
        await UntilIdle(pool, 6);
        Assert.That(Factory.MaxOpensInFlight, Is.LessThanOrEqualTo(2));
    }

    [Test]
    public async Task WarmUp_WaitsForTheRequestedNumberOfReadyChannels()
    {
        Factory.HoldOpens();
        var pool = CreatePool(o => o.PoolSize = 4);

        var warmUp = pool.WarmUpAsync(readyChannels: 3);
        Factory.AllowOpens(2);
        await UntilIdle(pool, 2);
        Assert.That(warmUp.IsCompleted, Is.False, "two of three channels are ready");

        Factory.AllowOpens(1);
        await warmUp.Within();
        Assert.That(pool.GetSnapshot().Idle, Is.GreaterThanOrEqualTo(3));
    }

    [TestCase(-1)]
    [TestCase(5)]
    public void WarmUp_RejectsReadyCountOutsideZeroToPoolSize(int readyChannels)
    {
        var pool = CreatePool(o => o.PoolSize = 4);

        var error = Assert.Throws<ArgumentOutOfRangeException>(() => pool.WarmUpAsync(readyChannels));

        Assert.That(error!.Message, Does.Contain("between 0 and the pool size (4)"));
    }

    [Test]
    public async Task FirstAcquire_OnAColdPool_StartsFillingAndGetsAChannel()
    {
        var pool = CreatePool(o => o.PoolSize = 4);

        await using var lease = await pool.AcquireAsync().Within();

        Assert.That(lease.Channel.OpenedOnThreadName, Is.EqualTo("ChannelPool background worker"));
        await UntilIdle(pool, 4);
    }
}
