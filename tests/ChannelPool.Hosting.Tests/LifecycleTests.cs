using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace ChannelPool.Hosting.Tests;

public class LifecycleTests
{
    [Test]
    public async Task StartUp_WaitsForReadyChannels_BeforeAnyHostedServiceStarts()
    {
        var factory = new FakeChannelFactory();
        factory.HoldOpens();
        var observer = new StartObserver();
        await using var host = TestHost.Create(services =>
        {
            // Registered first, so it would start first if the pool did not warm up before every StartAsync.
            services.AddSingleton<IHostedService>(provider => observer.Watching(provider.GetRequiredKeyedService<IChannelPool>("orders")));
            services.AddChannelPool("orders", _ => factory)
                .Configure(o => o.PoolSize = 4)
                .ConfigureStartup(o => o.WaitForReadyChannels = 3);
        });

        var start = host.Host.StartAsync();
        await Task.Delay(50);
        Assert.That(start.IsCompleted, Is.False, "start-up waits while opens are held");
        Assert.That(observer.OpenChannelsWhenStarted, Is.Null, "no hosted service started yet");
        factory.StopHoldingOpens();
        await start.Within();

        Assert.That(observer.OpenChannelsWhenStarted, Is.GreaterThanOrEqualTo(3));
        Assert.That(host.Log.GetSnapshot().Select(e => e.Message), Has.One.Matches<string>(m => m.StartsWith("Channel pool 'orders' is warm: ", StringComparison.Ordinal)
            && m.Contains("start-up waited for 3;", StringComparison.Ordinal) && !m.Contains("is warm: 0 ", StringComparison.Ordinal)));
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task StartUp_DoesNotBlock_WhenItWaitsForNoChannels()
    {
        var factory = new FakeChannelFactory();
        factory.HoldOpens();
        await using var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory).Configure(o => o.PoolSize = 4));

        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<IChannelPool>("orders");
        Assert.That(pool.GetSnapshot().Idle, Is.EqualTo(0), "started before any channel opened");
        Assert.That(pool.GetSnapshot().Opening, Is.GreaterThan(0), "the warm-up runs in the background");
        Assert.That(host.Log.GetSnapshot().Select(e => e.Message), Has.None.Contains("is warm"), "nothing is open yet, so the log must not say warm");
        Assert.That(host.Log.GetSnapshot().Select(e => e.Message), Has.One.Contains("Channel pool 'orders' is filling to 4 channel(s) in the background"));

        factory.StopHoldingOpens();
        await Eventually.That(() => pool.GetSnapshot().Idle == 4, "the pool filled after start-up");
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task StartUp_Fails_NamingThePool_WhenTheServerIsDown()
    {
        var factory = new FakeChannelFactory { OpenFailure = () => new IOException("connection refused") };
        await using var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory)
            .Configure(o =>
            {
                o.PoolSize = 2;
                o.Resilience.Retry.MaxRetryAttempts = 0;
                o.Resilience.CircuitBreaker.MinimumThroughput = 2;
            })
            .ConfigureStartup(o => o.WaitForReadyChannels = 2));

        var error = Assert.ThrowsAsync<InvalidOperationException>(() => host.Host.StartAsync().Within());

        Assert.That(error!.Message, Does.Contain("Channel pool 'orders' did not have the 2 open channel(s) its start-up waits for"));
        Assert.That(error.InnerException, Is.InstanceOf<ChannelPoolUnavailableException>());
        Assert.That(error.InnerException!.InnerException, Is.InstanceOf<IOException>());
    }

    [Test]
    public async Task StartUp_Fails_WhenTheReadyTimeoutRunsOut()
    {
        var factory = new FakeChannelFactory();
        factory.HoldOpens();
        await using var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory)
            .Configure(o => o.PoolSize = 2)
            .ConfigureStartup(o =>
            {
                o.WaitForReadyChannels = 2;
                o.ReadyTimeout = TimeSpan.FromMilliseconds(200);
            }));

        var error = Assert.ThrowsAsync<InvalidOperationException>(() => host.Host.StartAsync().Within());

        Assert.That(error!.Message, Does.Contain("within 00:00:00.2000000").And.Contain("opening=2"));
        factory.StopHoldingOpens();
    }

    [Test]
    public async Task Stop_DrainsThePool_WaitingForLeasesOutstanding()
    {
        var factory = new FakeChannelFactory();
        await using var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory)
            .Configure(o => o.PoolSize = 3)
            .ConfigureStartup(o => o.WaitForReadyChannels = 3));
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders");
        var lease = await pool.AcquireAsync();
        var leased = lease.Channel;

        var stop = host.Host.StopAsync();
        await Task.Delay(50);
        Assert.That(stop.IsCompleted, Is.False, "stop waits for the lease");
        Assert.That(leased.IsOpen, Is.True);
        lease.Dispose();
        await stop.Within();

        Assert.That(leased.IsClosed, Is.True, "the returned channel was closed gracefully");
        Assert.That(factory.OpenChannels, Is.Empty, "nothing leaked");
    }

    [Test]
    public async Task Stop_DoesNotHang_WhenTheServerIsGone()
    {
        // Closes never complete (the server is gone) and a lease is never returned; the host allows one second.
        var factory = new FakeChannelFactory
        {
            OnClose = static async (_, cancellationToken) => await Task.Delay(Timeout.Infinite, cancellationToken),
        };
        await using var host = TestHost.Create(
            services => services.AddChannelPool("orders", _ => factory)
                .Configure(o =>
                {
                    o.PoolSize = 2;
                    o.CloseTimeout = TimeSpan.FromMilliseconds(500);
                })
                .ConfigureStartup(o => o.WaitForReadyChannels = 2),
            shutdownTimeout: TimeSpan.FromSeconds(1));
        await host.Host.StartAsync().Within();
        var pool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders");
        var forgotten = await pool.AcquireAsync();

        await host.Host.StopAsync().Within();

        Assert.That(forgotten.IsActive, Is.False, "the lease that was never returned was taken back and aborted");
        await Eventually.That(() => factory.OpenChannels.Count == 0, "every channel ended: closes timed out into aborts");
        Assert.That(factory.Channels, Has.All.Matches<FakeChannel>(c => c.IsAborted));
    }

    private sealed class StartObserver
    {
        public int? OpenChannelsWhenStarted { get; private set; }

        public IHostedService Watching(IChannelPool pool) => new Observer(this, pool);

        private sealed class Observer(StartObserver owner, IChannelPool pool) : IHostedService
        {
            public Task StartAsync(CancellationToken cancellationToken)
            {
                var snapshot = pool.GetSnapshot();
                owner.OpenChannelsWhenStarted = snapshot.Idle + snapshot.Leased;
                return Task.CompletedTask;
            }

            public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;
        }
    }
}
