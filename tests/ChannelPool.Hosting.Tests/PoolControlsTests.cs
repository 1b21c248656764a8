using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace ChannelPool.Hosting.Tests;

/// <summary>The pool controls in a host: their options bound and reloaded, and a paused pool in the health check.</summary>
public class PoolControlsTests
{
    private const string Section = "ChannelPool:Pools:orders";

    [Test]
    public async Task TheControlsOptions_BindFromConfiguration()
    {
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => new FakeChannelFactory()).BindConfiguration(),
            new Dictionary<string, string?>
            {
                [$"{Section}:IdleTimeout"] = "00:00:20",
                [$"{Section}:LeakDetectionThreshold"] = "00:02:00",
                [$"{Section}:AcquireWhilePaused"] = "Wait",
            });

        var options = host.Services.GetRequiredService<IOptionsMonitor<ChannelPoolOptions>>().Get("orders");

        Assert.That(options.IdleTimeout, Is.EqualTo(TimeSpan.FromSeconds(20)));
        Assert.That(options.LeakDetectionThreshold, Is.EqualTo(TimeSpan.FromMinutes(2)));
        Assert.That(options.AcquireWhilePaused, Is.EqualTo(PausedAcquireMode.Wait));
    }

    [Test]
    public async Task AnIdleTimeoutTheSectionDoesNotName_KeepsFollowingTheLifetime_AndLeakDetectionStaysOff()
    {
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => new FakeChannelFactory()).BindConfiguration(),
            new Dictionary<string, string?> { [$"{Section}:PoolSize"] = "3" });

        var options = host.Services.GetRequiredService<IOptionsMonitor<ChannelPoolOptions>>().Get("orders");

        Assert.That((options.IdleTimeout, options.LeakDetectionThreshold), Is.EqualTo(((TimeSpan?)null, (TimeSpan?)null)));
    }

    [Test]
    public async Task APausedPool_IsReportedDegraded_SayingItIsPaused_AndHealthyAgainAfterResume()
    {
        var factory = new FakeChannelFactory();
        await using var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory)
            .Configure(o => o.PoolSize = 2)
            .ConfigureStartup(o => o.WaitForReadyChannels = 2)
            .AddHealthCheck());
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<IChannelPool>("orders");

        pool.Pause();
        var paused = await CheckAsync(host);
        pool.Resume();
        var resumed = await CheckAsync(host);

        Assert.That(paused.Status, Is.EqualTo(HealthStatus.Degraded), paused.Description);
        Assert.That(paused.Description, Does.Contain("Pool 'orders' is paused"));
        Assert.That(paused.Data["paused"], Is.EqualTo(true));
        Assert.That(resumed.Status, Is.EqualTo(HealthStatus.Healthy), resumed.Description);
        Assert.That(resumed.Data["paused"], Is.EqualTo(false));
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task AReload_ChangesTheIdleTimeout_OfTheRunningPool()
    {
        var factory = new FakeChannelFactory();
        var time = new FakeTimeProvider();
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => factory).BindConfiguration(),
            new Dictionary<string, string?>
            {
                [$"{Section}:PoolSize"] = "2",
                // The burst's channels take slots spread over the lifetime: a day without jitter keeps every deadline
                // beyond these minutes, so only the idle timeout closes what the test counts.
                [$"{Section}:ChannelLifetime"] = "1.00:00:00",
                [$"{Section}:LifetimeJitter"] = "0",
                [$"{Section}:IdleTimeout"] = "-00:00:00.001",
                [$"{Section}:Startup:WaitForReadyChannels"] = "2",
            },
            time);
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders");
        var burst = new List<ChannelLease<FakeChannel>>();
        for (var i = 0; i < 6; i++)
        {
            burst.Add(await pool.AcquireAsync().Within());
        }

        await Eventually.That(() => pool.GetSnapshot().Opening == 0, "the burst's opens finished");
        burst.ForEach(lease => lease.Dispose());
        time.Advance(TimeSpan.FromMinutes(5));
        Assert.That(pool.GetSnapshot().Idle, Is.EqualTo(8), "with no idle timeout (infinite), the burst's channels stay");

        host.Reconfigure($"{Section}:IdleTimeout", "00:00:30");
        time.Advance(TimeSpan.FromSeconds(61));

        await Eventually.That(() => pool.GetSnapshot().Idle == 2, () => $"the reloaded idle timeout closed the surplus down to the pool size ({pool.GetSnapshot()})");
        await host.Host.StopAsync().Within();
    }

    private static async Task<HealthReportEntry> CheckAsync(TestHost host)
    {
        var report = await host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync();
        return report.Entries["channelpool:orders"];
    }
}
