using Microsoft.Extensions.Options;

namespace ChannelPool.Tests.Options;

public class ReconfigureTests : PoolTestBase
{
    [Test]
    public async Task LargerPoolSize_StartsARefillAtOnce()
    {
        var options = SmallPool(poolSize: 4, maxChannels: 20);
        var pool = CreatePool(options);
        await pool.WarmUpAsync().Within();

        options.PoolSize = 10;
        pool.Reconfigure(options);

        Assert.That(pool.PoolSize, Is.EqualTo(10));
        Assert.That(pool.RefillThreshold, Is.EqualTo(5), "the threshold follows the new pool size");
        await UntilIdle(pool, 10);
    }

    [Test]
    public async Task ShorterLifetime_AppliesToChannelsAlreadyOpen()
    {
        var options = SmallPool();
        options.ChannelLifetime = TimeSpan.FromSeconds(90);
        var pool = CreatePool(options);
        await pool.WarmUpAsync().Within();
        var originals = Factory.Channels.ToList();

        options.ChannelLifetime = TimeSpan.FromSeconds(10);
        pool.Reconfigure(options);
        Time.Advance(TimeSpan.FromSeconds(10));

        await using var lease = await pool.AcquireAsync().Within();
        Assert.That(originals, Does.Not.Contain(lease.Channel), "channels opened under the old lifetime retire by the new one");
        await Eventually.That(() => originals.All(c => c.IsClosed), "every original channel was closed");
    }

    [Test]
    public async Task NewLeaseMode_AppliesToTheNextRelease()
    {
        var options = SmallPool(poolSize: 2);
        var pool = CreatePool(options);
        await pool.WarmUpAsync().Within();
        var lease = await pool.AcquireAsync();
        var channel = lease.Channel;

        options.LeaseMode = LeaseMode.SingleUse;
        pool.Reconfigure(options);
        lease.Dispose();

        Assert.That(pool.LeaseMode, Is.EqualTo(LeaseMode.SingleUse));
        await Eventually.That(() => channel.IsClosed, "the released channel was closed after its single use");
    }

    [Test]
    public async Task InvalidSettings_AreRejected_AndThePoolKeepsItsOwn()
    {
        var pool = CreatePool(SmallPool(poolSize: 4));
        await pool.WarmUpAsync().Within();
        var invalid = SmallPool(poolSize: 4);
        invalid.RefillThreshold = 9;

        var error = Assert.Throws<OptionsValidationException>(() => pool.Reconfigure(invalid));

        Assert.That(error!.Message, Does.Contain("RefillThreshold must be at least 0 and less than PoolSize (4); it was 9."));
        Assert.That(pool.RefillThreshold, Is.EqualTo(2));
        await using var lease = await pool.AcquireAsync().Within();
        Assert.That(lease.Channel.IsOpen, Is.True, "the pool goes on working");
    }

    [Test]
    public async Task Reconfigure_AfterDispose_SaysThePoolIsDisposed()
    {
        var pool = CreatePool();
        await pool.DisposeAsync();

        Assert.Throws<ObjectDisposedException>(() => pool.Reconfigure(SmallPool()));
    }
}
