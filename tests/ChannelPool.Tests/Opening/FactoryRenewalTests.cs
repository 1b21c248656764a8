using Microsoft.Extensions.Options;

namespace ChannelPool.Tests.Opening;

/// <summary>FactoryLifetime: the pool renews its factory on that period, and not at all by default.</summary>
public sealed class FactoryRenewalTests : PoolTestBase
{
    [Test]
    public async Task WithAFactoryLifetime_TheFactoryIsRenewedOncePerLifetime()
    {
        var options = SmallPool();
        options.FactoryLifetime = TimeSpan.FromSeconds(10);
        options.ChannelLifetime = TimeSpan.FromHours(1);
        var pool = CreatePool(options);
        await pool.WarmUpAsync(2);

        Time.Advance(TimeSpan.FromSeconds(9));
        Assert.That(Factory.Renewals, Is.Zero);
        Time.Advance(TimeSpan.FromSeconds(1));
        Assert.That(Factory.Renewals, Is.EqualTo(1));
        Time.Advance(TimeSpan.FromSeconds(20));
        Assert.That(Factory.Renewals, Is.EqualTo(3));

        // Channels already open stay: renewing changes where new ones come from, not the ones in use.
        Assert.That(pool.GetSnapshot().Idle, Is.EqualTo(4));
        Assert.That(Factory.CloseCalls + Factory.AbortCalls, Is.Zero);
    }

    [Test]
    public async Task ByDefault_TheFactoryIsNeverRenewed_AndReconfiguringTheLifetimeAwayStopsIt()
    {
        var plain = CreatePool(SmallPool());
        await plain.WarmUpAsync(1);
        Time.Advance(TimeSpan.FromHours(1));
        Assert.That(Factory.Renewals, Is.Zero);

        var options = SmallPool();
        options.Name = "renewed";
        options.FactoryLifetime = TimeSpan.FromSeconds(5);
        var renewed = CreatePool(options);
        Time.Advance(TimeSpan.FromSeconds(5));
        Assert.That(Factory.Renewals, Is.EqualTo(1));

        renewed.Reconfigure(new ChannelPoolOptions(options) { FactoryLifetime = null });
        Time.Advance(TimeSpan.FromMinutes(1));
        Assert.That(Factory.Renewals, Is.EqualTo(1));
    }

    [Test]
    public void AFactoryLifetimeUnderASecond_IsRefused_NamingTheOption()
    {
        var options = SmallPool();
        options.FactoryLifetime = TimeSpan.FromMilliseconds(500);

        var error = Assert.Throws<OptionsValidationException>(() => CreatePool(options));
        Assert.That(error!.Message, Does.Contain("FactoryLifetime").And.Contain("at least 1 second"));
    }
}
