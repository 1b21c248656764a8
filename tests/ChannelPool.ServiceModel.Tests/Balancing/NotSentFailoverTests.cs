using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.Soap;

namespace ChannelPool.ServiceModel.Tests.Balancing;

/// <summary>
/// A call that fails before anything was sent goes again at another address; one that may have reached the service
/// does not. On SoapCore over HTTPS, where a stopped instance refuses connections.
/// </summary>
[TestFixture]
public sealed class NotSentFailoverTests
{
    [Test]
    public async Task AnInstanceThatRefusesConnections_CostsNoCallerAnError_AndIsEjected()
    {
        using var certificate = TestCertificate.CreateEcdsa();
        await using var healthy = await SoapTestHost.StartAsync(certificate);
        var stopped = await SoapTestHost.StartAsync(certificate);
        await using var pool = new ServiceChannelPool<IEchoService>(
            SoapTestHost.CreateBasicBinding(),
            [SoapTestHost.CreateAddress(healthy.BasicAddress), SoapTestHost.CreateAddress(stopped.BasicAddress)],
            new ChannelPoolOptions { PoolSize = 4 },
            new BalancingOptions { Policy = BalancingPolicy.RoundRobin, ConsecutiveFailures = 3 },
            factory => TestCertificate.TrustOnly(factory.Credentials, certificate));
        for (var i = 0; i < 10; i++)
        {
            await CallAsync(pool, $"warm {i}");
        }

        Assert.That(stopped.Counters.Calls, Is.GreaterThan(0), "both instances served before one stopped");
        await stopped.StopAsync();

        // The docs' caller: a proxy per call, no try/finally. Every call succeeds; the ones leased at the stopped
        // instance were refused at connect and went to the other.
        var servedBefore = healthy.Counters.Calls;
        for (var i = 0; i < 30; i++)
        {
            await CallAsync(pool, $"after {i}");
        }

        Assert.That(healthy.Counters.Calls - servedBefore, Is.EqualTo(30));
        var endpoint = pool.BalancedPool!.GetEndpoints()[1];
        Assert.That(endpoint.State, Is.EqualTo(EndpointState.Ejected), endpoint.ToString());
    }

    [Test]
    public async Task AServiceFault_IsNeitherRetriedNorCountedAgainstTheAddress()
    {
        using var certificate = TestCertificate.CreateEcdsa();
        await using var first = await SoapTestHost.StartAsync(certificate);
        await using var second = await SoapTestHost.StartAsync(certificate);
        await using var pool = new ServiceChannelPool<IEchoService>(
            SoapTestHost.CreateBasicBinding(),
            [SoapTestHost.CreateAddress(first.BasicAddress), SoapTestHost.CreateAddress(second.BasicAddress)],
            new ChannelPoolOptions { PoolSize = 2 },
            new BalancingOptions { ConsecutiveFailures = 2 },
            factory => TestCertificate.TrustOnly(factory.Credentials, certificate));

        for (var i = 0; i < 6; i++)
        {
            var proxy = new EchoProxy(pool);
            Assert.Throws<System.ServiceModel.FaultException>(() => proxy.Fail("no"));
            proxy.Close();
        }

        Assert.That(first.Counters.Calls + second.Counters.Calls, Is.EqualTo(6), "each faulted call reached a service once");
        Assert.That(pool.BalancedPool!.GetEndpoints().Select(e => (e.State, e.Failures)), Has.All.EqualTo((EndpointState.Active, 0L)));
    }

    private static async Task CallAsync(ServiceChannelPool<IEchoService> pool, string text)
    {
        var proxy = new EchoProxy(pool);
        Assert.That(await proxy.EchoAfterAsync(text, 0), Is.EqualTo(text));
        proxy.Close();
    }
}
