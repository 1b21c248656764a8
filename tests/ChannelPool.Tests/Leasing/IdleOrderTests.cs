namespace ChannelPool.Tests.Leasing;

public class IdleOrderTests : PoolTestBase
{
    [Test]
    public async Task MostRecentlyUsed_IsTheDefault_AndLeasesTheChannelReleasedLast()
    {
        var pool = CreatePool(o => o.PoolSize = 3);
        await pool.WarmUpAsync().Within();
        var (first, second) = await ReleaseTwoInOrderAsync(pool);

        await using var next = await pool.AcquireAsync();

        Assert.That(new ChannelPoolOptions().IdleOrder, Is.EqualTo(IdleOrder.MostRecentlyUsed));
        Assert.That(next.Channel, Is.SameAs(second), "the channel released last is leased first");
        Assert.That(next.Channel, Is.Not.SameAs(first));
    }

    [Test]
    public async Task MostRecentlyUsed_OneCallerAtATime_KeepsReusingOneChannel()
    {
        var pool = CreatePool(o => o.PoolSize = 3);
        await pool.WarmUpAsync().Within();

        var used = new HashSet<FakeChannel>();
        for (var i = 0; i < 10; i++)
        {
            await using var lease = await pool.AcquireAsync();
            used.Add(lease.Channel);
        }

        Assert.That(used, Has.Count.EqualTo(1));
    }

    [Test]
    public async Task LeastRecentlyUsed_LeasesTheChannelIdleLongest_SoOneCallerRotatesThroughAll()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 3;
            o.IdleOrder = IdleOrder.LeastRecentlyUsed;
        });
        await pool.WarmUpAsync().Within();

        var used = new HashSet<FakeChannel>();
        for (var i = 0; i < 6; i++)
        {
            await using var lease = await pool.AcquireAsync();
            used.Add(lease.Channel);
        }

        Assert.That(used, Has.Count.EqualTo(3));
    }

    [Test]
    public async Task LeastRecentlyUsed_LeasesTheChannelReleasedFirst_AfterTheOnesNeverLeased()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 2;
            o.MaxChannels = 2;
            o.IdleOrder = IdleOrder.LeastRecentlyUsed;
        });
        await pool.WarmUpAsync().Within();
        var (first, second) = await ReleaseTwoInOrderAsync(pool);

        await using var next = await pool.AcquireAsync();

        Assert.That(next.Channel, Is.SameAs(first));
        Assert.That(next.Channel, Is.Not.SameAs(second));
    }

    // Leases two channels at once, then releases them in order, so the idle set holds them first, then second.
    private static async Task<(FakeChannel First, FakeChannel Second)> ReleaseTwoInOrderAsync(DefaultChannelPool<FakeChannel> pool)
    {
        var a = await pool.AcquireAsync();
        var b = await pool.AcquireAsync();
        var first = a.Channel;
        var second = b.Channel;
        await a.DisposeAsync();
        await b.DisposeAsync();
        return (first, second);
    }
}
