using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;

namespace ChannelPool.Hosting.Tests;

public class HealthTests
{
    [Test]
    public async Task WarmPoolWithItsBreakerClosed_IsHealthy()
    {
        await using var host = await StartAsync(new FakeChannelFactory());

        var report = await CheckAsync(host);

        Assert.That(report.Status, Is.EqualTo(HealthStatus.Healthy), report.Description);
        Assert.That(report.Data["idle"], Is.EqualTo(4));
        Assert.That(report.Data["breaker"], Is.EqualTo("Closed"));
    }

    [Test]
    public async Task PoolAtItsRefillThreshold_IsDegraded()
    {
        var factory = new FakeChannelFactory();
        await using var host = await StartAsync(factory);
        var pool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders");
        factory.HoldOpens();
        await using var first = await pool.AcquireAsync();
        await using var second = await pool.AcquireAsync();

        var report = await CheckAsync(host);

        Assert.That(report.Status, Is.EqualTo(HealthStatus.Degraded), report.Description);
        Assert.That(report.Description, Does.Contain("refilling"));
        factory.StopHoldingOpens();
    }

    [Test]
    public async Task PoolWhoseBreakerIsOpen_IsUnhealthy()
    {
        var factory = new FakeChannelFactory { OpenFailure = () => new IOException("connection refused") };
        await using var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory)
            .Configure(o =>
            {
                o.PoolSize = 4;
                o.Resilience.Retry.MaxRetryAttempts = 0;
                o.Resilience.CircuitBreaker.MinimumThroughput = 2;
            })
            .AddHealthCheck());
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<IChannelPool>("orders");
        await Eventually.That(() => pool.GetSnapshot().BreakerState == BreakerState.Open, "the breaker opened");

        var report = await CheckAsync(host);

        Assert.That(report.Status, Is.EqualTo(HealthStatus.Unhealthy), report.Description);
        Assert.That(report.Description, Does.Contain("circuit breaker is open"));
    }

    [Test]
    public async Task PoolWithNoOpenChannel_IsUnhealthy_OrTheRegisteredFailureStatus()
    {
        var factory = new FakeChannelFactory();
        factory.HoldOpens();
        await using var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory)
            .Configure(o => o.PoolSize = 4)
            .AddHealthCheck(failureStatus: HealthStatus.Degraded, tags: ["ready"]));
        await host.Host.StartAsync().Within();

        var report = await CheckAsync(host);

        Assert.That(report.Status, Is.EqualTo(HealthStatus.Degraded), "the registration's failure status stands in for Unhealthy");
        Assert.That(report.Description, Does.Contain("has no open channel"));
        Assert.That(report.Tags, Does.Contain("ready"));
        factory.StopHoldingOpens();
    }

    private static async Task<TestHost> StartAsync(FakeChannelFactory factory)
    {
        var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory)
            .Configure(o => o.PoolSize = 4)
            .ConfigureStartup(o => o.WaitForReadyChannels = 4)
            .AddHealthCheck());
        await host.Host.StartAsync().Within();
        return host;
    }

    private static async Task<HealthReportEntry> CheckAsync(TestHost host)
    {
        var report = await host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync();
        return report.Entries["channelpool:orders"];
    }
}
