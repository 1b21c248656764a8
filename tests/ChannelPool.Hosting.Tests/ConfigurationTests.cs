using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace ChannelPool.Hosting.Tests;

public class ConfigurationTests
{
    private const string Section = "ChannelPool:Pools:orders";

    [Test]
    public async Task BindConfiguration_ReadsThePoolsSection()
    {
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => new FakeChannelFactory()).BindConfiguration(),
            new Dictionary<string, string?>
            {
                [$"{Section}:PoolSize"] = "12",
                [$"{Section}:MaxChannels"] = "40",
                [$"{Section}:ChannelLifetime"] = "00:02:00",
                [$"{Section}:LeaseMode"] = "SingleUse",
                [$"{Section}:Resilience:Retry:MaxRetryAttempts"] = "1",
                [$"{Section}:Startup:WaitForReadyChannels"] = "4",
            });

        var options = host.Services.GetRequiredService<IOptionsMonitor<ChannelPoolOptions>>().Get("orders");
        var startup = host.Services.GetRequiredService<IOptionsMonitor<ChannelPoolStartupOptions>>().Get("orders");

        Assert.That(options.PoolSize, Is.EqualTo(12));
        Assert.That(host.Services.GetRequiredKeyedService<IChannelPool>("orders").RefillThreshold, Is.EqualTo(6), "the threshold follows the configured pool size");
        Assert.That(options.MaxChannels, Is.EqualTo(40));
        Assert.That(options.ChannelLifetime, Is.EqualTo(TimeSpan.FromMinutes(2)));
        Assert.That(options.LeaseMode, Is.EqualTo(LeaseMode.SingleUse));
        Assert.That(options.Resilience.Retry.MaxRetryAttempts, Is.EqualTo(1));
        Assert.That(startup.WaitForReadyChannels, Is.EqualTo(4));
    }

    [Test]
    public async Task BindConfiguration_ReadsMaxLeasesPerChannel_AndLeaseSharingAlways_AndThePoolSharesChannels()
    {
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => new FakeChannelFactory()).BindConfiguration(),
            new Dictionary<string, string?> { [$"{Section}:MaxLeasesPerChannel"] = "8", [$"{Section}:LeaseSharing"] = "Always", [$"{Section}:PoolSize"] = "2" });
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<IChannelPool<FakeChannel>>("orders");

        await using var first = await pool.AcquireAsync();
        await using var second = await pool.AcquireAsync();

        Assert.That(host.Services.GetRequiredService<IOptionsMonitor<ChannelPoolOptions>>().Get("orders").MaxLeasesPerChannel, Is.EqualTo(8));
        Assert.That(second.Channel, Is.SameAs(first.Channel));
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task BindConfiguration_ReadsMaxLeasesPerChannel_AndByDefaultAnAdaptivePoolGivesLeasesTheirOwnChannels_UntilItHasABaseline()
    {
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => new FakeChannelFactory()).BindConfiguration(),
            new Dictionary<string, string?> { [$"{Section}:MaxLeasesPerChannel"] = "8", [$"{Section}:PoolSize"] = "2" });
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<IChannelPool<FakeChannel>>("orders");

        await using var first = await pool.AcquireAsync();
        await using var second = await pool.AcquireAsync();

        var inForce = (DefaultChannelPool<FakeChannel>)pool;
        Assert.That((inForce.MaxLeasesPerChannel, inForce.LeaseSharing), Is.EqualTo((8, LeaseSharing.Adaptive)));
        Assert.That(second.Channel, Is.Not.SameAs(first.Channel), "no baseline yet, so each lease has a channel");
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task ConfiguredName_CannotRenameThePool()
    {
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => new FakeChannelFactory()).BindConfiguration(),
            new Dictionary<string, string?> { [$"{Section}:Name"] = "something-else" });

        Assert.That(host.Services.GetRequiredKeyedService<IChannelPool>("orders").Name, Is.EqualTo("orders"));
    }

    private static IEnumerable<TestCaseData> BadConfiguration()
    {
        TestCaseData Case(string key, string value, string expected) =>
            new TestCaseData(key, value, expected).SetName($"Start-up rejects {key}={value}");

        yield return Case("PoolSize", "0", "Channel pool 'orders': PoolSize must be between 1 and MaxChannels (126); it was 0.");
        yield return Case("RefillThreshold", "80", "Channel pool 'orders': RefillThreshold must be at least 0 and less than PoolSize (50); it was 80.");
        yield return Case("ChannelLifetime", "00:00:00.1", "Channel pool 'orders': ChannelLifetime must be between 00:00:01 and 1.00:00:00; it was 00:00:00.1000000.");
        yield return Case("MaxConcurrentOpens", "0", "Channel pool 'orders': MaxConcurrentOpens must be between 1 and 2147483647; it was 0.");
        yield return Case("MaxLeasesPerChannel", "65", "Channel pool 'orders': MaxLeasesPerChannel must be between 1 and 64; it was 65.");
        yield return Case("MaxLeasesPerChannel", "0", "Channel pool 'orders': MaxLeasesPerChannel must be between 1 and 64; it was 0.");
        yield return Case("LeaseSharing", "Sometimes", "Failed to convert configuration value 'Sometimes' at 'ChannelPool:Pools:orders:LeaseSharing' to type 'ChannelPool.LeaseSharing'.");
        yield return Case("Resilience:CircuitBreaker:FailureRatio", "2", "Channel pool 'orders': Resilience.CircuitBreaker.FailureRatio must be between 0 and 1; it was 2.");
        yield return Case("IdleTarget:Mode", "Psychic", "Failed to convert configuration value 'Psychic' at 'ChannelPool:Pools:orders:IdleTarget:Mode' to type 'ChannelPool.IdleTargetMode'.");
        yield return Case("IdleTarget:Minimum", "0", "Channel pool 'orders': IdleTarget.Minimum must be between 1 and 2147483647; it was 0.");
        yield return Case("IdleTarget:Window", "00:00:00", "Channel pool 'orders': IdleTarget.Window must be between 00:00:00.1000000 and 1.00:00:00; it was 00:00:00.");
        yield return Case("Startup:WaitForReadyChannels", "-1", "Channel pool 'orders': Startup.WaitForReadyChannels must be at least 0; it was -1.");
        yield return Case("Startup:WaitForReadyChannels", "51", "Channel pool 'orders': Startup.WaitForReadyChannels must be at most PoolSize (50); it was 51.");
        yield return Case("PoolSize", "lots", "Failed to convert configuration value 'lots' at 'ChannelPool:Pools:orders:PoolSize' to type 'System.Int32'.");
        yield return Case("IdleTimeout", "00:00:00", "Channel pool 'orders': IdleTimeout must be greater than zero and at most ChannelLifetime (00:01:30), or Timeout.InfiniteTimeSpan to keep idle channels until their lifetime ends; it was 00:00:00.");
        yield return Case("IdleTimeout", "-00:00:05", "Channel pool 'orders': IdleTimeout must be greater than zero and at most ChannelLifetime (00:01:30), or Timeout.InfiniteTimeSpan to keep idle channels until their lifetime ends; it was -00:00:05.");
        yield return Case("LeakDetectionThreshold", "00:00:00", "Channel pool 'orders': LeakDetectionThreshold must be greater than zero and at most 1.00:00:00, or Timeout.InfiniteTimeSpan (\"-00:00:00.001\" in configuration) to turn leak detection off; it was 00:00:00.");
        yield return Case("LeakDetectionThreshold", "-00:01:00", "Channel pool 'orders': LeakDetectionThreshold must be greater than zero and at most 1.00:00:00, or Timeout.InfiniteTimeSpan (\"-00:00:00.001\" in configuration) to turn leak detection off; it was -00:01:00.");
        yield return Case("AcquireWhilePaused", "Sometimes", "Failed to convert configuration value 'Sometimes' at 'ChannelPool:Pools:orders:AcquireWhilePaused' to type 'ChannelPool.PausedAcquireMode'.");
    }

    [TestCaseSource(nameof(BadConfiguration))]
    public async Task BadConfiguration_StopsStartUp_NamingThePoolTheOptionAndTheRule(string key, string value, string expected)
    {
        var factory = new FakeChannelFactory();
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => factory).BindConfiguration(),
            new Dictionary<string, string?> { [$"{Section}:{key}"] = value });

        var error = Assert.CatchAsync<Exception>(() => host.Host.StartAsync().Within());

        Assert.That(error!.Message, Does.Contain(expected));
        Assert.That(factory.OpenAttempts, Is.EqualTo(0), "nothing was opened with bad settings");
    }
}
