using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace ChannelPool.Hosting.Tests;

/// <summary>
/// Binding a section must change only what the section names: values that follow other options stay unset, so the
/// pool works them out from the options it is finally given.
/// </summary>
public class ConfigurationBindingTests
{
    private const string Section = "ChannelPool:Pools:orders";

    [Test]
    public async Task ValuesTheSectionDoesNotName_KeepFollowingTheirDefaults()
    {
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => new FakeChannelFactory())
                .BindConfiguration()
                .Configure(o =>
                {
                    o.PoolSize = 40;
                    o.ChannelLifetime = TimeSpan.FromSeconds(60);
                }),
            new Dictionary<string, string?> { [$"{Section}:PoolSize"] = "10" });

        var options = host.Services.GetRequiredService<IOptionsMonitor<ChannelPoolOptions>>().Get("orders");
        var pool = host.Services.GetRequiredKeyedService<IChannelPool>("orders");

        Assert.That(options.RefillThreshold, Is.Null, "the binder did not freeze the refill threshold");
        Assert.That(pool.RefillThreshold, Is.EqualTo(20), "the refill threshold follows the PoolSize set after binding");
        Assert.That(options.CleanupInterval, Is.Null, "the cleanup interval follows the ChannelLifetime set after binding");
        Assert.That(options.LeaseMode, Is.Null, "a lease mode the section does not name was not chosen");
        Assert.That(pool.LeaseMode, Is.EqualTo(LeaseMode.Reuse));
    }

    [Test]
    public async Task IdleTarget_BindsFromItsSubsection_AndWhatItDoesNotNameFollowsTheLifetime()
    {
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => new FakeChannelFactory()).BindConfiguration(),
            new Dictionary<string, string?>
            {
                [$"{Section}:ChannelLifetime"] = "00:01:00",
                [$"{Section}:IdleTarget:Mode"] = "Adaptive",
                [$"{Section}:IdleTarget:Minimum"] = "3",
            });

        var options = host.Services.GetRequiredService<IOptionsMonitor<ChannelPoolOptions>>().Get("orders");
        var pool = host.Services.GetRequiredKeyedService<IChannelPool>("orders");

        Assert.That((options.IdleTarget.Mode, options.IdleTarget.Minimum), Is.EqualTo((IdleTargetMode.Adaptive, 3)));
        Assert.That((options.IdleTarget.Window, options.IdleTarget.DecayHalfLife), Is.EqualTo(((TimeSpan?)null, (TimeSpan?)null)), "left to follow the lifetime");
        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(50), "an adaptive target starts at PoolSize");
        Assert.That(pool.RefillThreshold, Is.EqualTo(49), "and refills as soon as the idle count falls below it");
    }

    [Test]
    public async Task ValuesTheSectionNames_AreExplicit()
    {
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => new FakeChannelFactory())
                .BindConfiguration()
                .Configure(o => o.PoolSize = 40),
            new Dictionary<string, string?>
            {
                [$"{Section}:RefillThreshold"] = "5",
                [$"{Section}:LeaseMode"] = "Reuse",
            });

        var options = host.Services.GetRequiredService<IOptionsMonitor<ChannelPoolOptions>>().Get("orders");

        Assert.That(options.RefillThreshold, Is.EqualTo(5));
        Assert.That(options.LeaseMode, Is.EqualTo(LeaseMode.Reuse), "a lease mode the section names is chosen, even the default one");
    }
}
