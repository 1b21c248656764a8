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
}
