using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing.ServiceModel;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>The README's example, unchanged, against a real service on every binding.</summary>
[TestFixture]
public sealed class DropInTests
{
    [TearDown]
    public Task TearDown() => ChannelPoolFactory<ISomeService>.DestroyAsync();

    [Test]
    public async Task TheReadmeExample_CallsTheServiceOverAPooledChannel([Values] Transport transport)
    {
        await using var service = await TestService.StartAsync(transport);
        ChannelPoolFactory<ISomeService>.Initialize(service.Binding, service.EchoAddress, service.Configure);

        var proxy = new MyProxy();
        var reply = proxy.Echo("Hello");
        proxy.Close();

        Assert.That(reply, Is.EqualTo("Hello"));
        Assert.That(service.Counters.Calls, Is.EqualTo(1));
        Assert.That(proxy.State, Is.EqualTo(System.ServiceModel.CommunicationState.Closed));
    }

    [Test]
    public async Task ProxiesOneAfterAnother_ReuseOnePooledChannel([Values] Transport transport)
    {
        await using var service = await TestService.StartAsync(transport);
        var pool = ChannelPoolFactory<ISomeService>.Initialize(
            service.Binding, service.EchoAddress, service.Configure, new ChannelPoolOptions { PoolSize = 4 });
        await pool.WarmUpAsync(readyChannels: 4);
        var opened = pool.GetSnapshot().TotalOpened;

        for (var i = 0; i < 20; i++)
        {
            var proxy = new MyProxy();
            Assert.That(proxy.Echo($"call {i}"), Is.EqualTo($"call {i}"));
            proxy.Close();
        }

        Assert.That(pool.GetSnapshot().TotalOpened, Is.EqualTo(opened), "reuse mode opened no channel on the callers' path");
        Assert.That(service.Counters.Calls, Is.EqualTo(20));
    }
}
