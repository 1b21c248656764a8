namespace ChannelPool.Tests.Leasing;

/// <summary>A factory whose IsUsable throws must not leak a lease: the pool counts the channel as unusable.</summary>
public class FaultyUsabilityCheckTests : PoolTestBase
{
    [Test]
    public async Task Release_WhenIsUsableThrows_EvictsTheChannel_AndTheLeaseIsNotLost()
    {
        var factory = new ThrowingCheckFactory(Factory);
        var pool = CreatePool(factory, SmallPool(poolSize: 2));
        await pool.WarmUpAsync().Within();

        var lease = await pool.AcquireAsync().Within();
        var channel = lease.Channel;
        factory.Throw = true;

        Assert.That(lease.Dispose, Throws.Nothing);
        factory.Throw = false;

        Assert.That(lease.IsActive, Is.False);
        await Eventually.That(() => channel.IsAborted, "the channel whose check threw is aborted");
        Assert.That(pool.GetSnapshot().Leased, Is.Zero, "the lease came back");
    }

    [Test]
    public async Task Acquire_WhenIsUsableThrows_SkipsTheChannel_AndHandsOutAnother()
    {
        var factory = new ThrowingCheckFactory(Factory);
        var pool = CreatePool(factory, SmallPool(poolSize: 2));
        await pool.WarmUpAsync().Within();
        var idle = Factory.Channels.ToList();
        factory.Throw = true;

        // Held, so no new channel can arrive before the lease has tried, and evicted, both idle ones.
        Factory.HoldOpens();
        var acquire = pool.AcquireAsync();
        await Eventually.That(() => idle.All(c => c.IsAborted), "both channels whose check threw are aborted");
        factory.Throw = false;
        Factory.AllowOpens(4);
        await using var lease = await acquire.AsTask().Within();

        Assert.That(idle, Does.Not.Contain(lease.Channel));
        Assert.That(pool.GetSnapshot().Leased, Is.EqualTo(1), "only the lease handed out is counted");
    }

    private sealed class ThrowingCheckFactory(FakeChannelFactory inner) : IPooledChannelFactory<FakeChannel>
    {
        public volatile bool Throw;

        public ValueTask<FakeChannel> OpenAsync(CancellationToken cancellationToken) => inner.OpenAsync(cancellationToken);

        public bool IsUsable(FakeChannel channel) =>
            Throw ? throw new InvalidOperationException("The check itself failed.") : inner.IsUsable(channel);

        public ValueTask CloseAsync(FakeChannel channel, CancellationToken cancellationToken) => inner.CloseAsync(channel, cancellationToken);

        public void Abort(FakeChannel channel) => inner.Abort(channel);
    }
}
