using System.ServiceModel;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;
using ChannelPool.Testing.ServiceModel.Soap;
using Microsoft.Extensions.Options;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>Every bad input gets an error that says what was wrong and what to do.</summary>
[TestFixture]
public sealed class BadInputTests
{
    private static readonly EndpointAddress TcpAddress = NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:1/echo"));

    [TearDown]
    public Task TearDown() => Task.WhenAll(ChannelPoolFactory<ISomeService>.DestroyAsync(), ChannelPoolFactory<IEchoService>.DestroyAsync());

    [Test]
    public void ANullBindingOrAddress_IsRefusedByName()
    {
        Assert.Multiple(() =>
        {
            Assert.That(() => new ServiceChannelPool<IEchoService>(null!, TcpAddress), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("binding"));
            Assert.That(() => new ServiceChannelPool<IEchoService>(NetTcpTestHost.CreateBinding(), (EndpointAddress)null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("address"));
            Assert.That(() => new ServiceChannelPool<IEchoService>(NetTcpTestHost.CreateBinding(), (IEnumerable<EndpointAddress>)null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("addresses"));
            Assert.That(() => new EchoProxy(null!, TcpAddress), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("binding"));
            Assert.That(() => new EchoProxy(NetTcpTestHost.CreateBinding(), null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("remoteAddress"));
            Assert.That(() => new EchoProxy((ServiceChannelPool<IEchoService>)null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("pool"));
        });
    }

    [Test]
    public void AProxyForAContractWithNoPool_SaysHowToFixIt()
    {
        var proxy = new MyProxy();

        var error = Assert.Throws<InvalidOperationException>(() => proxy.Echo("anyone there?"));

        Assert.That(error!.Message, Does.Contain(nameof(ISomeService)).And.Contain("ChannelPoolFactory<ISomeService>.Initialize"));
    }

    [Test]
    public void ATypeThatIsNotAServiceContract_IsRefused()
    {
        var error = Assert.Throws<ArgumentException>(() => new ServiceChannelPool<INotAContract>(NetTcpTestHost.CreateBinding(), TcpAddress));

        Assert.That(error!.Message, Does.Contain(nameof(INotAContract)).And.Contain("[ServiceContract]"));
    }

    [Test]
    public void AnAddressWhoseSchemeIsNotTheBindings_IsRefused()
    {
        var httpsAddress = SoapTestHost.CreateAddress(new Uri("https://127.0.0.1:1/basic"));

        var error = Assert.Throws<ArgumentException>(() => new ServiceChannelPool<IEchoService>(NetTcpTestHost.CreateBinding(), httpsAddress));

        Assert.That(error!.Message, Does.Contain("https").And.Contain("net.tcp"));
    }

    [Test]
    public void AChannelLifetimeNotShorterThanTheBindingsReceiveTimeout_IsRefused()
    {
        var binding = NetTcpTestHost.CreateBinding();
        binding.ReceiveTimeout = TimeSpan.FromSeconds(60);

        var error = Assert.Throws<OptionsValidationException>(() => new ServiceChannelPool<IEchoService>(
            binding, TcpAddress, new ChannelPoolOptions { ChannelLifetime = TimeSpan.FromSeconds(90) }));

        Assert.That(error!.Message, Does.Contain("ChannelLifetime").And.Contain("ReceiveTimeout").And.Contain("00:01:00"));
    }

    [Test]
    public void TheReceiveTimeoutRule_AppliesOnlyToBindingsWithSessions()
    {
        var binding = SoapTestHost.CreateBasicBinding();
        binding.ReceiveTimeout = TimeSpan.FromSeconds(60);

        Assert.That(
            () => new ServiceChannelPool<IEchoService>(binding, SoapTestHost.CreateAddress(new Uri("https://127.0.0.1:1/basic")), new ChannelPoolOptions { ChannelLifetime = TimeSpan.FromSeconds(90) }).Dispose(),
            Throws.Nothing,
            "an HTTP channel has no server session to time out");
    }

    [Test]
    public async Task AReconfigurationThatConflictsWithTheBinding_IsRefusedAndThePoolKeepsItsSettings()
    {
        var binding = NetTcpTestHost.CreateBinding();
        binding.ReceiveTimeout = TimeSpan.FromSeconds(60);
        await using var pool = new ServiceChannelPool<IEchoService>(binding, TcpAddress, new ChannelPoolOptions { ChannelLifetime = TimeSpan.FromSeconds(30), PoolSize = 5 });

        Assert.Throws<OptionsValidationException>(() => pool.Reconfigure(new ChannelPoolOptions { ChannelLifetime = TimeSpan.FromMinutes(5), PoolSize = 9 }));

        Assert.That(pool.PoolSize, Is.EqualTo(5));
    }

    [Test]
    public async Task InitializingAContractTwice_IsRefusedUntilItIsDestroyed()
    {
        await using var service = await TestService.StartAsync(Transport.BasicHttps);
        ChannelPoolFactory<ISomeService>.Initialize(service.Binding, service.EchoAddress, service.Configure);

        var error = Assert.Throws<InvalidOperationException>(() => ChannelPoolFactory<ISomeService>.Initialize(service.Binding, service.EchoAddress, service.Configure));
        Assert.That(error!.Message, Does.Contain("Destroy"));

        await ChannelPoolFactory<ISomeService>.DestroyAsync();
        ChannelPoolFactory<ISomeService>.Initialize(service.Binding, service.EchoAddress, service.Configure);
        var proxy = new MyProxy();
        Assert.That(proxy.Echo("again"), Is.EqualTo("again"));
        proxy.Close();
    }

    [Test]
    public async Task AClosedProxy_RefusesMoreCalls_AndClosingOrDisposingAgainDoesNothing()
    {
        await using var service = await TestService.StartAsync(Transport.BasicHttps);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, configureFactory: service.Configure);
        var proxy = new EchoProxy(pool);
        proxy.Echo("once");
        proxy.Close();

        var error = Assert.Throws<ObjectDisposedException>(() => proxy.Echo("twice"));
        Assert.That(error!.Message, Does.Contain("closed"));
        Assert.That(() => { proxy.Close(); proxy.Dispose(); proxy.Abort(); }, Throws.Nothing);
        Assert.That(pool.GetSnapshot().Leased, Is.Zero);
    }

    [Test]
    public async Task ProxiesBuiltFromBindingAndAddress_ShareOnePool_AndBadInputIsNotCached()
    {
        await using var service = await TestService.StartAsync(Transport.BasicHttps);
        var first = new EchoProxy(service.Binding, service.EchoAddress);
        var second = new EchoProxy(service.Binding, service.EchoAddress);

        Assert.That(second.ServiceChannelPool, Is.SameAs(first.ServiceChannelPool), "a per-call proxy does not make a pool per call");
        first.ClientCredentials.ServiceCertificate.SslCertificateAuthentication = ShareTrust(service);
        Assert.That(first.Echo("built from binding and address"), Is.EqualTo("built from binding and address"));
        first.Close();
        second.Close();

        var wrongScheme = NetTcpTestHost.CreateAddress(new Uri($"net.tcp://127.0.0.1:{service.Port}/echo"));
        Assert.Throws<ArgumentException>(() => _ = new EchoProxy(service.Binding, wrongScheme));
        Assert.Throws<ArgumentException>(() => _ = new EchoProxy(service.Binding, wrongScheme), "the same clear error the second time");
    }

    private static System.ServiceModel.Security.X509ServiceCertificateAuthentication ShareTrust(TestService service)
    {
        var credentials = new System.ServiceModel.Description.ClientCredentials();
        TestCertificate.TrustOnly(credentials, service.Certificate);
        return credentials.ServiceCertificate.SslCertificateAuthentication;
    }
}
