namespace ChannelPool.Tests.State;

public class PoolInvariantTests : PoolTestBase
{
    [Test]
    public void TheInvariantCheck_IsOnInTheseTests_InEveryBuildConfiguration()
    {
        // Release builds compile Debug.Assert out; the switch in the test project keeps the check running there.
        Assert.That(PoolInvariant.IsChecked, Is.True, $"Set the {PoolInvariant.SwitchName} switch in the test project.");
    }

    [Test]
    public async Task ABusyPool_KeepsItsInvariant_ThroughEveryTransition()
    {
        // Leases, releases, a hand-over to a waiter, an eviction, refills and a drain, each followed by the check.
        var pool = CreatePool(o =>
        {
            o.PoolSize = 2;
            o.MaxChannels = 3;
        });
        await pool.WarmUpAsync().Within();
        var leases = new List<ChannelLease<FakeChannel>>();
        for (var i = 0; i < 3; i++)
        {
            leases.Add(await pool.AcquireAsync().Within());
        }

        var waiting = pool.AcquireAsync();
        leases[0].MarkBroken();
        leases.ForEach(lease => lease.Dispose());
        using (var handedOver = await waiting.AsTask().Within())
        {
            Assert.That(handedOver.IsActive, Is.True);
        }

        await UntilQuiet(pool);
        await pool.DrainAsync().Within();

        var s = pool.GetSnapshot();
        Assert.That((s.Idle, s.Leased, s.Opening, s.Closing), Is.EqualTo((0, 0, 0, 0)));
        Assert.That(s.TotalOpened, Is.EqualTo(s.TotalClosed));
    }

    [Test]
    public async Task ALeasedChannelLeftInTheIdlePlace_IsCaughtByTheNextTransition()
    {
        // A release that put the channel's place back to idle but left it leased: the totals still add up
        // (open = idle + leased + evicted), so only the sum of the channels' own places can see it.
        var pool = CreatePool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();
        var lease = await pool.AcquireAsync().Within();
        await UntilQuiet(pool);
        lease.Entry!.Place = ChannelPlace.Idle;

        var broken = Assert.ThrowsAsync<InvalidOperationException>(() => pool.WarmUpAsync());
        Assert.That(broken.Message, Does.Contain("broke its invariant in WarmUp").And.Contain("leased 0 with 0 lease(s)"));

        lease.Entry!.Place = ChannelPlace.Leased;
        lease.Dispose();
        Assert.That(pool.GetSnapshot().Leased, Is.Zero);
    }

    [Test]
    public async Task AnIdleChannelMarkedLeased_IsCaughtByTheNextTransition()
    {
        // A lease that marked the channel leased but left it in the idle queue, where the next caller would take it too.
        var pool = CreatePool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();
        var lease = await pool.AcquireAsync().Within();
        var leasedEntry = lease.Entry!;
        lease.Dispose();
        await UntilQuiet(pool);
        leasedEntry.Place = ChannelPlace.Leased;

        var broken = Assert.ThrowsAsync<InvalidOperationException>(() => pool.WarmUpAsync());
        Assert.That(broken.Message, Does.Contain("broke its invariant in WarmUp").And.Contain("leased 1 with 1 lease(s)"));

        leasedEntry.Place = ChannelPlace.Idle;
        Assert.That(() => pool.WarmUpAsync(), Throws.Nothing);
    }
}
