using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Polly;

namespace ChannelPool.Hosting.Tests;

public class RegistrationTests
{
    [Test]
    public async Task NamedPool_IsAKeyedSingleton_AsItsTypeAndAsIChannelPool()
    {
        var factory = new FakeChannelFactory();
        await using var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory).Configure(o => o.PoolSize = 3));

        var pool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders");

        Assert.That(pool.Name, Is.EqualTo("orders"));
        Assert.That(pool.PoolSize, Is.EqualTo(3));
        Assert.That(host.Services.GetRequiredKeyedService<IChannelPool>("orders"), Is.SameAs(pool));
        Assert.That(host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders"), Is.SameAs(pool));
    }

    [Test]
    public async Task NamedPool_IsResolvableAsItsLeasingAbstraction_AndLeasesThroughIt()
    {
        var factory = new FakeChannelFactory();
        await using var host = TestHost.Create(services => services.AddChannelPool("orders", _ => factory).Configure(o => o.PoolSize = 1));
        await host.Host.StartAsync().Within();

        var pool = host.Services.GetRequiredKeyedService<IChannelPool<FakeChannel>>("orders");
        Assert.That(pool, Is.SameAs(host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders")));

        await using (var lease = await pool.AcquireAsync().AsTask().Within())
        {
            Assert.That(lease.Channel.IsOpen, Is.True);
        }

        using (var lease = pool.Acquire())
        {
            Assert.That(lease.Channel.IsOpen, Is.True);
        }

        Assert.That(pool.GetSnapshot().Leased, Is.EqualTo(0), "both leases went back to the pool");
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task TwoPools_AreSeparate_EachWithItsOwnOptionsAndFactory()
    {
        var orders = new FakeChannelFactory();
        var billing = new FakeChannelFactory();
        await using var host = TestHost.Create(services =>
        {
            services.AddChannelPool("orders", _ => orders).Configure(o => o.PoolSize = 2);
            services.AddChannelPool("billing", _ => billing).Configure(o => o.PoolSize = 5);
        });

        await host.Host.StartAsync().Within();
        var ordersPool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("orders");
        var billingPool = host.Services.GetRequiredKeyedService<DefaultChannelPool<FakeChannel>>("billing");
        await Eventually.That(() => orders.Opened == 2 && billing.Opened == 5, "each pool filled from its own factory");

        Assert.That(ordersPool, Is.Not.SameAs(billingPool));
        Assert.That(billingPool.PoolSize, Is.EqualTo(5));
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task FactoryType_IsResolvedFromTheContainer()
    {
        var factory = new FakeChannelFactory();
        await using var host = TestHost.Create(services =>
        {
            services.AddSingleton(factory);
            services.AddChannelPool<FakeChannel, FakeChannelFactory>("orders").Configure(o => o.PoolSize = 2);
        });

        await host.Host.StartAsync().Within();
        await Eventually.That(() => factory.Opened == 2, "the registered factory opened the pool's channels");
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task OpenPipeline_CanComeFromThePollyRegistryByName()
    {
        var retries = 0;
        var attempts = 0;
        var factory = new FakeChannelFactory { OpenFailure = () => Interlocked.Increment(ref attempts) == 1 ? new IOException("reset") : null };
        await using var host = TestHost.Create(services =>
        {
            services.AddResiliencePipeline("orders-open", pipeline => pipeline.AddRetry(new()
            {
                MaxRetryAttempts = 2,
                Delay = TimeSpan.Zero,
                OnRetry = _ =>
                {
                    Interlocked.Increment(ref retries);
                    return ValueTask.CompletedTask;
                },
            }));
            services.AddChannelPool("orders", _ => factory)
                .Configure(o => o.PoolSize = 1)
                .UseOpenPipeline("orders-open")
                .ConfigureStartup(o => o.WaitForReadyChannels = 1);
        });

        await host.Host.StartAsync().Within();

        Assert.That(retries, Is.EqualTo(1), "the registry's pipeline retried the failed open");
        Assert.That(factory.Opened, Is.EqualTo(1));
        await host.Host.StopAsync().Within();
    }

    [Test]
    public async Task OpenPipeline_WithAnUnknownKey_StopsStartUp_NamingThePoolAndTheKey()
    {
        var factory = new FakeChannelFactory();
        await using var host = TestHost.Create(services =>
        {
            services.AddResiliencePipeline("orders-open", pipeline => pipeline.AddTimeout(TimeSpan.FromSeconds(1)));
            services.AddChannelPool("orders", _ => factory).UseOpenPipeline("order-open");
        });

        var error = Assert.CatchAsync<Exception>(() => host.Host.StartAsync().Within());

        Assert.That(error!.Message, Does.Contain("Channel pool 'orders'").And.Contain("'order-open'"));
        Assert.That(factory.OpenAttempts, Is.EqualTo(0));
    }

    [Test]
    public void OpenPipeline_WithABlankKey_IsRejected()
    {
        var builder = new ServiceCollection().AddChannelPool("orders", _ => new FakeChannelFactory());

        Assert.Throws<ArgumentException>(() => builder.UseOpenPipeline(" "));
    }

    [Test]
    public void DuplicateName_IsRejected_WithTheName()
    {
        var services = new ServiceCollection();
        services.AddChannelPool("orders", _ => new FakeChannelFactory());

        var error = Assert.Throws<InvalidOperationException>(() => services.AddChannelPool("orders", _ => new FakeChannelFactory()));

        Assert.That(error!.Message, Does.Contain("A channel pool named 'orders' is already registered"));
    }

    [TestCase("")]
    [TestCase("   ")]
    public void BlankName_IsRejected(string name)
    {
        var services = new ServiceCollection();

        Assert.Throws<ArgumentException>(() => services.AddChannelPool(name, _ => new FakeChannelFactory()));
    }
}
