namespace ChannelPool.Tests.Leasing;

public class ChannelLeaseTests : PoolTestBase
{
    [Test]
    public async Task Release_Twice_DoesNothingTheSecondTime()
    {
        var pool = CreatePool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();
        var lease = await pool.AcquireAsync();
        var copy = lease;
        await UntilQuiet(pool);
        var idleBefore = pool.GetSnapshot().Idle;

        lease.Dispose();
        copy.Dispose();
        await lease.DisposeAsync();

        var after = pool.GetSnapshot();
        Assert.That(after.Idle, Is.EqualTo(idleBefore + 1), after.ToString());
        Assert.That(after.Leased, Is.EqualTo(0), after.ToString());
    }

    [Test]
    public async Task StaleLease_CannotReleaseOrUseTheNextHoldersLease()
    {
        // One channel in all, so the second lease is on the very channel the stale lease held.
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxChannels = 1;
        });
        await pool.WarmUpAsync().Within();
        var stale = await pool.AcquireAsync();
        stale.Dispose();
        var current = await pool.AcquireAsync();
        Assert.That(current.Channel, Is.SameAs(Factory.Channels.Single()), "the same channel, leased again");

        stale.Dispose();
        stale.MarkBrokenIgnoringStaleness();

        Assert.That(current.IsActive, Is.True);
        Assert.That(pool.GetSnapshot() is { Idle: 0, Leased: 1 }, Is.True);
        Assert.That(stale.IsActive, Is.False);
        var error = Assert.Throws<InvalidOperationException>(() => _ = stale.Channel);
        Assert.That(error!.Message, Does.Contain("already released"));
        current.Dispose();
        Assert.That(Factory.Channels.Single().IsOpen, Is.True, "the stale lease did not mark the channel broken");
    }

    [Test]
    public void DefaultLease_SaysItWasNeverAcquired()
    {
        var lease = default(ChannelLease<FakeChannel>);

        Assert.That(lease.IsActive, Is.False);
        var error = Assert.Throws<InvalidOperationException>(() => _ = lease.Channel);
        Assert.That(error!.Message, Does.Contain("never acquired"));
        Assert.DoesNotThrow(lease.Dispose);
    }
}

internal static class StaleLeaseExtensions
{
    /// <summary>Tries MarkBroken on a lease that may be stale, which must throw and change nothing.</summary>
    public static void MarkBrokenIgnoringStaleness(this ChannelLease<FakeChannel> lease)
    {
        try
        {
            lease.MarkBroken();
        }
        catch (InvalidOperationException)
        {
        }
    }
}
