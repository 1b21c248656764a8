namespace ChannelPool.Tests.Opening;

public class RefillTests : PoolTestBase
{
    [Test]
    public async Task Refill_StartsWhenIdleCountFallsToThreshold_AndFillsBackToPoolSize()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 10;
            o.MaxChannels = 20;
        });
        await pool.WarmUpAsync().Within();
        Factory.HoldOpens();
        var leases = new List<ChannelLease<FakeChannel>>();

        // Idle 10 -> 6: above the threshold (half of 10), nothing opens.
        for (var i = 0; i < 4; i++)
        {
            leases.Add(await pool.AcquireAsync());
        }

        Assert.That(pool.GetSnapshot() is { Idle: 6, Opening: 0 }, Is.True, pool.GetSnapshot().ToString());
        Assert.That(Factory.OpenAttempts, Is.EqualTo(10));

        // Idle 6 -> 5: at the threshold, the refill starts.
        leases.Add(await pool.AcquireAsync());
        Assert.That(pool.GetSnapshot().Opening, Is.GreaterThan(0));

        Factory.StopHoldingOpens();
        await UntilIdle(pool, 10);
        await UntilQuiet(pool);
        Assert.That(pool.GetSnapshot() is { Idle: 10, Leased: 5 }, Is.True, pool.GetSnapshot().ToString());
        leases.ForEach(l => l.Dispose());
    }

    [Test]
    public async Task Refill_NeverTakesThePoolAboveMaxChannels()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 4;
            o.MaxChannels = 5;
        });
        await pool.WarmUpAsync().Within();
        var leases = new List<ChannelLease<FakeChannel>>();
        for (var i = 0; i < 5; i++)
        {
            leases.Add(await pool.AcquireAsync().Within());
        }

        await UntilQuiet(pool);
        var waiting = pool.AcquireAsync().AsTask();

        var snapshot = pool.GetSnapshot();
        Assert.That(snapshot.Idle + snapshot.Leased + snapshot.Opening, Is.EqualTo(5), snapshot.ToString());
        Assert.That(Factory.Opened, Is.EqualTo(5));
        Assert.That(waiting.IsCompleted, Is.False);

        var released = leases[0].Channel;
        leases[0].Dispose();
        await using var handedOver = await waiting.Within();
        Assert.That(handedOver.Channel, Is.SameAs(released), "the waiter gets the released channel; no sixth one is opened");
        Assert.That(Factory.Opened, Is.EqualTo(5));
        leases.Skip(1).ToList().ForEach(l => l.Dispose());
    }

    [Test]
    public async Task Opens_InFlight_NeverExceedMaxConcurrentOpens()
    {
        Factory.HoldOpens();
        var pool = CreatePool(o =>
        {
            o.PoolSize = 12;
            o.MaxChannels = 12;
            o.MaxConcurrentOpens = 3;
        });

        _ = pool.WarmUpAsync(0);
        await Eventually.That(() => Factory.OpensInFlight == 3, "three opens are in flight");
        for (var opened = 1; opened <= 12; opened++)
        {
            Factory.AllowOpens(1);
            await Eventually.That(() => Factory.Opened == opened, $"{opened} channels opened");
        }

        await UntilIdle(pool, 12);
        Assert.That(Factory.MaxOpensInFlight, Is.EqualTo(3));
    }
}
