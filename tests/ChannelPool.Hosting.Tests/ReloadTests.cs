using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace ChannelPool.Hosting.Tests;

public class ReloadTests
{
    private const string Section = "ChannelPool:Pools:orders";

    [Test]
    public async Task ChangedPoolSize_TakesEffectWithoutARestart()
    {
        var factory = new FakeChannelFactory();
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => factory).BindConfiguration(),
            new Dictionary<string, string?> { [$"{Section}:PoolSize"] = "4", [$"{Section}:Startup:WaitForReadyChannels"] = "4" });
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<IChannelPool>("orders");

        host.Reconfigure($"{Section}:PoolSize", "9");

        await Eventually.That(() => pool.GetSnapshot().Idle == 9, () => $"the pool grew to 9 idle channels (now {pool.GetSnapshot()})");
        Assert.That(pool.RefillThreshold, Is.EqualTo(4));
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task SwitchedToAnAdaptiveIdleTarget_FollowsDemandWithoutARestart()
    {
        var factory = new FakeChannelFactory();
        var time = new FakeTimeProvider();
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => factory).BindConfiguration().AddHealthCheck(),
            new Dictionary<string, string?> { [$"{Section}:PoolSize"] = "10", [$"{Section}:Startup:WaitForReadyChannels"] = "10" },
            time);
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<IChannelPool>("orders");

        host.Reconfigure($"{Section}:IdleTarget:Window", "00:00:08");
        host.Reconfigure($"{Section}:IdleTarget:Mode", "Adaptive");
        for (var second = 0; second < 30; second++)
        {
            time.Advance(TimeSpan.FromSeconds(1));
        }

        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(IdleTargetOptions.DefaultMinimum), "nobody leased, so the target came down to its minimum");
        var health = await host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync().Within();
        Assert.That(health.Entries["channelpool:orders"].Data["idleTarget"], Is.EqualTo(IdleTargetOptions.DefaultMinimum), "the health check's data carries the target");

        host.Reconfigure($"{Section}:IdleTarget:Mode", "Fixed");
        Assert.That(pool.GetSnapshot().IdleTarget, Is.EqualTo(10));
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task ChangedLifetime_RetiresChannelsOpenedUnderTheOldOne()
    {
        var factory = new FakeChannelFactory();
        var time = new FakeTimeProvider();
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => factory).BindConfiguration(),
            new Dictionary<string, string?>
            {
                [$"{Section}:PoolSize"] = "2",
                [$"{Section}:ChannelLifetime"] = "00:01:30",
                [$"{Section}:Startup:WaitForReadyChannels"] = "2",
            },
            time);
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders");
        var originals = factory.Channels.ToList();

        host.Reconfigure($"{Section}:ChannelLifetime", "00:00:10");
        time.Advance(TimeSpan.FromSeconds(10));

        await using (var lease = await pool.AcquireAsync().Within())
        {
            Assert.That(originals, Does.Not.Contain(lease.Channel));
        }

        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task InvalidReload_IsRejectedAndLogged_AndThePoolKeepsWorking()
    {
        var factory = new FakeChannelFactory();
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => factory).BindConfiguration(),
            new Dictionary<string, string?> { [$"{Section}:PoolSize"] = "4" });
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders");

        Assert.DoesNotThrow(() => host.Reconfigure($"{Section}:PoolSize", "0"));

        Assert.That(pool.PoolSize, Is.EqualTo(4));
        var rejected = host.Log.GetSnapshot().Single(e => e.Id.Id == 101);
        Assert.That(rejected.Level, Is.EqualTo(LogLevel.Error));
        Assert.That(rejected.Message, Does.Contain("'orders'").And.Contain("PoolSize must be between 1 and MaxChannels (126); it was 0."));
        await using (var lease = await pool.AcquireAsync().Within())
        {
            Assert.That(lease.Channel.IsOpen, Is.True);
        }

        host.Reconfigure($"{Section}:PoolSize", "6");
        Assert.That(pool.PoolSize, Is.EqualTo(6), "a later valid reload still applies");
        await host.Host.StopAsync().Within();
    }
}
