using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace ChannelPool.Hosting.Tests;

/// <summary>
/// Binding a section must change only what the section names. The configuration binder writes every value-type
/// property back, which would otherwise freeze values that follow other options.
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

        Assert.That(options.RefillThreshold, Is.EqualTo(20), "the refill threshold follows the PoolSize set after binding");
        Assert.That(options.CleanupInterval, Is.EqualTo(TimeSpan.FromSeconds(28)), "the cleanup interval follows the ChannelLifetime set after binding");
        Assert.That(options.IsLeaseModeSet, Is.False, "a lease mode the section does not name was not chosen");
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
        Assert.That(options.IsLeaseModeSet, Is.True);
    }
}
