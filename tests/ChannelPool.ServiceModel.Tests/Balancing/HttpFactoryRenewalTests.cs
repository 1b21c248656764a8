using System.Net;
using System.Net.Http;
using System.Net.Sockets;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;
using System.ServiceModel.Dispatcher;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.Soap;
using Microsoft.Extensions.Time.Testing;

namespace ChannelPool.ServiceModel.Tests.Balancing;

/// <summary>
/// An HTTP binding's host name moving to another address: WCF's factory keeps one <c>HttpClient</c> whose pooled
/// connections never resolve the name again, so only a renewed factory reaches the new address.
/// </summary>
[TestFixture]
public sealed class HttpFactoryRenewalTests
{
    [Test]
    public async Task AHostNameThatMovesToAnotherInstance_GetsCallsThere_OnceTheFactoryIsRenewed()
    {
        using var certificate = TestCertificate.CreateEcdsa();
        await using var before = await SoapTestHost.StartAsync(certificate);
        await using var after = await SoapTestHost.StartAsync(certificate);

        // "orders.test" resolves, at each new connection as DNS would, to whichever instance this says.
        var resolvesTo = before.Port;
        var address = SoapTestHost.CreateAddress(new Uri($"https://orders.test:{before.Port}{before.BasicAddress.AbsolutePath}"));
        await using var pool = new ServiceChannelPool<IEchoService>(
            SoapTestHost.CreateBasicBinding(),
            address,
            new ChannelPoolOptions { PoolSize = 2, FactoryLifetime = TimeSpan.FromSeconds(1), ChannelLifetime = TimeSpan.FromSeconds(2) },
            factory => factory.Endpoint.EndpointBehaviors.Add(new ResolveAtConnect(() => Volatile.Read(ref resolvesTo), certificate)));

        await CallAsync(pool, "before the move");
        Assert.That(before.Counters.Calls, Is.EqualTo(1));

        Volatile.Write(ref resolvesTo, after.Port);
        await Eventually.That(
            () =>
            {
                CallAsync(pool, "after the move").GetAwaiter().GetResult();
                return after.Counters.Calls > 0;
            },
            () => $"a call reaches the instance the name now resolves to (calls: before {before.Counters.Calls}, after {after.Counters.Calls})");
    }

    [Test]
    public void AnHttpEndpoint_RenewsItsFactoryEveryFiveMinutes_ANetTcpOneNever()
    {
        var time = new FakeTimeProvider();
        using var http = new ServiceChannelPool<IEchoService>(
            SoapTestHost.CreateBasicBinding(), SoapTestHost.CreateAddress(new Uri("https://127.0.0.1:9443/basic")), timeProvider: time);
        using var tcp = new ServiceChannelPool<IEchoService>(
            Testing.ServiceModel.NetTcp.NetTcpTestHost.CreateBinding(),
            Testing.ServiceModel.NetTcp.NetTcpTestHost.CreateAddress(new Uri("net.tcp://127.0.0.1:9444/echo")),
            timeProvider: time);
        var (httpEndpoint, tcpEndpoint) = (http.Endpoint, tcp.Endpoint);

        time.Advance(ServiceChannelPool<IEchoService>.HttpFactoryLifetime - TimeSpan.FromSeconds(1));
        Assert.That(http.Endpoint, Is.SameAs(httpEndpoint));
        time.Advance(TimeSpan.FromSeconds(1));

        Assert.That(http.Endpoint, Is.Not.SameAs(httpEndpoint), "the HTTP endpoint's factory was renewed at 5 minutes");
        time.Advance(TimeSpan.FromHours(1));
        Assert.That(tcp.Endpoint, Is.SameAs(tcpEndpoint), "the net.tcp endpoint's factory was not");
    }

    private static async Task CallAsync(ServiceChannelPool<IEchoService> pool, string text)
    {
        var proxy = new EchoProxy(pool);
        Assert.That(await proxy.EchoAfterAsync(text, 0), Is.EqualTo(text));
        proxy.Close();
    }

    /// <summary>
    /// Gives the factory's <c>HttpClient</c> a handler that resolves the host name at each new connection and keeps its
    /// connections pooled, as the default handler does with DNS; it trusts only the test certificate.
    /// </summary>
    private sealed class ResolveAtConnect(Func<int> port, System.Security.Cryptography.X509Certificates.X509Certificate2 certificate) : IEndpointBehavior
    {
        public void AddBindingParameters(ServiceEndpoint endpoint, BindingParameterCollection bindingParameters) =>
            bindingParameters.Add(new Func<HttpClientHandler, HttpMessageHandler>(_ => new SocketsHttpHandler
            {
                ConnectCallback = async (context, cancellationToken) =>
                {
                    var socket = new Socket(SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
                    await socket.ConnectAsync(new IPEndPoint(IPAddress.Loopback, port()), cancellationToken);
                    return new NetworkStream(socket, ownsSocket: true);
                },
                SslOptions = { RemoteCertificateValidationCallback = (_, presented, _, _) => presented?.GetCertHashString() == certificate.GetCertHashString() },
            }));

        public void ApplyClientBehavior(ServiceEndpoint endpoint, ClientRuntime clientRuntime)
        {
        }

        public void ApplyDispatchBehavior(ServiceEndpoint endpoint, EndpointDispatcher endpointDispatcher)
        {
        }

        public void Validate(ServiceEndpoint endpoint)
        {
        }
    }
}
