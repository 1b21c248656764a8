using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using System.ServiceModel.Channels;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.Soap;

namespace ChannelPool.ServiceModel.Tests.TestServices;

/// <summary>The SoapCore test host against the plain WCF client (no pool): it must behave like a real HTTPS WCF service.</summary>
[TestFixture]
[CancelAfter(15_000)]
public sealed class SoapTestHostTests
{
    private X509Certificate2 _certificate = null!;

    public enum Endpoint
    {
        Basic,
        Ws,
        UserName,
    }

    [OneTimeSetUp]
    public void CreateCertificate() => _certificate = TestCertificate.Create();

    [OneTimeTearDown]
    public void DisposeCertificate() => _certificate.Dispose();

    [TestCase(Endpoint.Basic)]
    [TestCase(Endpoint.Ws)]
    [TestCase(Endpoint.UserName)]
    public async Task Echo_RoundTripsOnEachEndpoint_AndCountsOneConnectionOneHandshakeAndTheCall(Endpoint endpoint)
    {
        await using var host = await SoapTestHost.StartAsync(_certificate);
        using var factory = new Factory(_certificate, host, endpoint);
        var channel = factory.Open();

        Assert.That(channel.Echo($"hello over {endpoint}"), Is.EqualTo($"hello over {endpoint}"));
        Assert.That(Counts(host), Is.EqualTo((Connections: 1L, TlsHandshakes: 1L, Calls: 1L)));
        Assert.That(host.Counters.SessionsStarted, Is.Zero, "HTTP bindings have no sessions");
    }

    [TestCase(Endpoint.Basic)]
    [TestCase(Endpoint.Ws)]
    public async Task WhoAmI_IsAnonymousOnTheEndpointsWithoutAClientCredential(Endpoint endpoint)
    {
        await using var host = await SoapTestHost.StartAsync(_certificate);
        using var factory = new Factory(_certificate, host, endpoint);

        Assert.That(factory.Open().WhoAmI(), Is.EqualTo("anonymous"));
    }

    [TestCase(TestUsers.Alice, TestUsers.AlicePassword)]
    [TestCase(TestUsers.Bob, TestUsers.BobPassword)]
    public async Task WhoAmI_ReturnsTheUserWhoseUsernameTokenTheUserNameEndpointChecked(string userName, string password)
    {
        await using var host = await SoapTestHost.StartAsync(_certificate);
        using var factory = new Factory(_certificate, host, Endpoint.UserName, userName, password);

        Assert.That(factory.Open().WhoAmI(), Is.EqualTo(userName));
    }

    [TestCase(TestUsers.Alice, "not-alice-secret")]
    [TestCase("mallory", TestUsers.AlicePassword)]
    public async Task AWrongPasswordOrAnUnknownUser_IsAFaultExceptionNamingTheCause_AndNoCall(string userName, string password)
    {
        await using var host = await SoapTestHost.StartAsync(_certificate);
        using var factory = new Factory(_certificate, host, Endpoint.UserName, userName, password);
        var channel = factory.Open();

        var fault = Assert.Throws<FaultException>(() => channel.WhoAmI());

        Assert.That(fault.Message, Is.EqualTo($"The user name or password is wrong for '{userName}'."));
        Assert.That(host.Counters.Calls, Is.Zero);
    }

    [TestCase(Endpoint.Basic)]
    [TestCase(Endpoint.Ws)]
    [TestCase(Endpoint.UserName)]
    public async Task Fail_SurfacesAsAFaultExceptionWithTheReason_AndLeavesTheChannelOpened(Endpoint endpoint)
    {
        await using var host = await SoapTestHost.StartAsync(_certificate);
        using var factory = new Factory(_certificate, host, endpoint);
        var channel = factory.Open();

        var fault = Assert.Throws<FaultException>(() => channel.Fail("no such order"));

        Assert.That(fault.Reason.ToString(), Is.EqualTo("no such order"));
        Assert.That(((IClientChannel)channel).State, Is.EqualTo(CommunicationState.Opened));
        Assert.That(channel.Echo("still usable"), Is.EqualTo("still usable"));
        Assert.That(Counts(host), Is.EqualTo((Connections: 1L, TlsHandshakes: 1L, Calls: 2L)));
    }

    [TestCase(Endpoint.Basic)]
    [TestCase(Endpoint.Ws)]
    [TestCase(Endpoint.UserName)]
    public async Task EchoAfter_AnswersAfterItsServiceTime_AndTwoCallsAtOnceOverlap_OnASessionlessEndpoint(Endpoint endpoint)
    {
        await using var host = await SoapTestHost.StartAsync(_certificate, secureConversation: new() { Concurrency = ServiceConcurrency.Single });
        using var factory = new Factory(_certificate, host, endpoint);
        var channel = factory.Open();
        await channel.EchoAfterAsync("warm", 0);

        var started = System.Diagnostics.Stopwatch.StartNew();
        var replies = await Task.WhenAll(channel.EchoAfterAsync("first", 800), channel.EchoAfterAsync("second", 800));

        // No session, so nothing to serve one at a time: WCF serves a sessionless channel concurrently even under Single.
        Assert.That(replies, Is.EquivalentTo(new[] { "first", "second" }));
        Assert.That(started.Elapsed, Is.GreaterThanOrEqualTo(TimeSpan.FromMilliseconds(780)).And.LessThan(TimeSpan.FromMilliseconds(1600)));
        Assert.That(host.Counters.PeakCallsPerSession, Is.Zero, "HTTP bindings have no sessions");
        var fault = Assert.ThrowsAsync<FaultException>(() => channel.EchoAfterAsync("never", -5));
        Assert.That(fault!.Reason.ToString(), Does.Contain("0 to 60000 ms").And.Contain("asked for -5 ms"));
    }

    [TestCase(Endpoint.Basic)]
    [TestCase(Endpoint.Ws)]
    [TestCase(Endpoint.UserName)]
    public async Task ChannelsOfOneFactory_ShareItsConnection_WhileASecondFactoryCostsASecondHandshake(Endpoint endpoint)
    {
        await using var host = await SoapTestHost.StartAsync(_certificate);
        using var first = new Factory(_certificate, host, endpoint);
        var channels = new[] { first.Open(), first.Open(), first.Open() };
        for (int i = 0; i < 10; i++)
        {
            foreach (IEchoService channel in channels)
            {
                channel.Echo($"call {i}");
            }
        }

        Assert.That(Counts(host), Is.EqualTo((Connections: 1L, TlsHandshakes: 1L, Calls: 30L)));

        using var second = new Factory(_certificate, host, endpoint);
        second.Open().Echo("second factory");

        Assert.That(Counts(host), Is.EqualTo((Connections: 2L, TlsHandshakes: 2L, Calls: 31L)));
    }

    [Test]
    public async Task Stop_DropsTheConnections_AndANewHostStartsOnTheSamePortWithTheSameCounters()
    {
        var host = await SoapTestHost.StartAsync(_certificate);
        int port = host.Port;
        using var factory = new Factory(_certificate, host, Endpoint.Ws);
        var before = factory.Open();
        before.Echo("before stop");

        await host.StopAsync();

        Assert.Throws(Is.InstanceOf<CommunicationException>(), () => before.Echo("host is down"));

        await using var restarted = await SoapTestHost.StartAsync(_certificate, port, host.Counters);
        var after = factory.Open();

        Assert.That(restarted.Port, Is.EqualTo(port));
        Assert.That(restarted.Counters, Is.SameAs(host.Counters));
        Assert.That(after.Echo("after restart"), Is.EqualTo("after restart"));
        Assert.That(restarted.Counters.Calls, Is.EqualTo(2));
        Assert.That(restarted.Counters.TlsHandshakes, Is.EqualTo(2), "the connection the client pooled died with the first host");
    }

    [Test]
    public async Task PortZero_BindsAFreePort_AndTheAddressesCarryIt()
    {
        await using var host = await SoapTestHost.StartAsync(_certificate);

        Assert.That(host.Port, Is.Positive);
        Assert.That(new[] { host.BasicAddress, host.WsAddress, host.UserNameAddress }.Select(uri => uri.ToString()), Is.EqualTo(new[]
        {
            $"https://127.0.0.1:{host.Port}/basic",
            $"https://127.0.0.1:{host.Port}/ws",
            $"https://127.0.0.1:{host.Port}/username",
        }));
    }

    // Only what HTTP has: a snapshot would also carry session counts, which stay zero here and change shape over time.
    private static (long Connections, long TlsHandshakes, long Calls) Counts(SoapTestHost host) =>
        (host.Counters.Connections, host.Counters.TlsHandshakes, host.Counters.Calls);

    private sealed class Factory : IDisposable
    {
        private readonly ChannelFactory<IEchoService> _factory;

        public Factory(X509Certificate2 certificate, SoapTestHost host, Endpoint endpoint, string userName = TestUsers.Alice, string password = TestUsers.AlicePassword)
        {
            (Binding binding, Uri address) = endpoint switch
            {
                Endpoint.Basic => ((Binding)SoapTestHost.CreateBasicBinding(), host.BasicAddress),
                Endpoint.Ws => (SoapTestHost.CreateWsBinding(), host.WsAddress),
                _ => (SoapTestHost.CreateUserNameBinding(), host.UserNameAddress),
            };
            binding.OpenTimeout = binding.SendTimeout = binding.CloseTimeout = TimeSpan.FromSeconds(5);
            _factory = new ChannelFactory<IEchoService>(binding, SoapTestHost.CreateAddress(address));
            TestCertificate.TrustOnly(_factory.Credentials, certificate);
            if (endpoint == Endpoint.UserName)
            {
                _factory.Credentials.UserName.UserName = userName;
                _factory.Credentials.UserName.Password = password;
            }
        }

        public IEchoService Open()
        {
            IEchoService channel = _factory.CreateChannel();
            ((IClientChannel)channel).Open();
            return channel;
        }

        public void Dispose() => _factory.Abort();
    }
}
