using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;

namespace ChannelPool.ServiceModel.Tests.TestServices;

/// <summary>The net.tcp test host against the plain WCF client (no pool): it must behave like a real net.tcp service.</summary>
[TestFixture]
[CancelAfter(10_000)]
public sealed class NetTcpTestHostTests
{
    private X509Certificate2 _certificate = null!;

    [OneTimeSetUp]
    public void CreateCertificate() => _certificate = TestCertificate.Create();

    [OneTimeTearDown]
    public void DisposeCertificate() => _certificate.Dispose();

    [Test]
    public async Task Echo_RoundTripsOverTls_AndWhoAmIIsAnonymous()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);
        var channel = factory.Open();

        Assert.That(channel.Echo("hello over net.tcp"), Is.EqualTo("hello over net.tcp"));
        Assert.That(channel.WhoAmI(), Is.EqualTo("anonymous"));
        Assert.That(host.Counters.TlsHandshakes, Is.EqualTo(1));
        Assert.That(host.Counters.Calls, Is.EqualTo(2));
    }

    [TestCase(ServiceConcurrency.Multiple)]
    [TestCase(ServiceConcurrency.Single)]
    public async Task Echo_RoundTripsMessagesOfEverySize_OnConcurrentSessionsSharingTheHostsBuffers(ServiceConcurrency concurrency)
    {
        // Envelopes from about 300 bytes to the reader quotas' 8,192 characters of text, on four sessions at once that
        // read into and write from the host's one pool of buffers: a buffer handed to two messages would garble one.
        await using var host = await NetTcpTestHost.StartAsync(_certificate, concurrency: concurrency);
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);
        var channels = Enumerable.Range(0, 4).Select(_ => factory.Open()).ToList();
        int[] sizes = [0, 1, 100, 2_000, 8_000];

        // Every call in flight at once, asynchronously (blocking callers would starve a busy machine's thread pool,
        // which the client needs to read its replies); under Multiple the replies of one session interleave.
        var echoed = await Task.WhenAll(channels.SelectMany((channel, c) => sizes.SelectMany(size => Enumerable.Range(0, 5).Select(async i =>
        {
            var text = new string((char)('a' + ((c + i) % 26)), size) + $"|{c}/{size}/{i}";
            return (Sent: text, Echoed: await channel.EchoAfterAsync(text, 0));
        }))));

        Assert.That(echoed.Where(e => e.Echoed != e.Sent).Select(e => e.Sent[^12..]), Is.Empty);
        Assert.That(host.Counters.Calls, Is.EqualTo(4 * sizes.Length * 5));
    }

    [Test]
    public async Task EachChannel_IsOneConnectionOneHandshakeAndOneSession_WhateverItsNumberOfCalls()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);

        var first = factory.Open();
        for (int i = 0; i < 20; i++)
        {
            first.Echo($"call {i}");
        }

        Assert.That(host.Counters.Snapshot(), Is.EqualTo(new ServerCountsSnapshot(Connections: 1, TlsHandshakes: 1, SessionsStarted: 1, SessionsEnded: 0, Calls: 20)));

        var second = factory.Open();
        second.Echo("second channel");

        Assert.That(host.Counters.Snapshot(), Is.EqualTo(new ServerCountsSnapshot(Connections: 2, TlsHandshakes: 2, SessionsStarted: 2, SessionsEnded: 0, Calls: 21)));
        Assert.That(host.ActiveConnections, Is.EqualTo(2));
    }

    [Test]
    public async Task Fail_SurfacesAsAFaultExceptionWithTheReason_AndLeavesTheChannelOpened()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);
        var channel = factory.Open();

        var fault = Assert.Throws<FaultException>(() => channel.Fail("no such order"));

        Assert.That(fault.Reason.ToString(), Is.EqualTo("no such order"));
        Assert.That(((IClientChannel)channel).State, Is.EqualTo(CommunicationState.Opened));
        Assert.That(channel.Echo("still usable"), Is.EqualTo("still usable"));
        Assert.That(host.Counters.TlsHandshakes, Is.EqualTo(1));
    }

    [Test]
    public async Task SessionCounter_CountsPerChannel()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<ISessionCounter>(_certificate, host.CounterAddress);
        var first = factory.Open();
        var second = factory.Open();

        Assert.That(new[] { first.Increment(), first.Increment(), second.Increment(), first.Increment(), second.Increment() }, Is.EqualTo(new[] { 1, 2, 1, 3, 2 }));
    }

    [Test]
    public async Task AClientClose_EndsTheSessionWithEndRecords_AndTheClientKeepsTheConnectionForItsNextChannel()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);
        var channel = (IClientChannel)factory.Open();
        ((IEchoService)channel).Echo("before close");

        // Close sends the end record and waits for the host's end record; a host that did not answer would time out.
        channel.Close(TimeSpan.FromSeconds(2));

        Assert.That(channel.State, Is.EqualTo(CommunicationState.Closed));
        Assert.That(() => host.Counters.SessionsEnded, Is.EqualTo(1).After(2000, 10));
        Assert.That(host.ActiveConnections, Is.EqualTo(1), "the WCF client pools the raw TCP connection after a graceful close");

        // The next channel reuses that TCP connection: a new preamble, a new TLS handshake, a new session.
        var next = factory.Open();
        Assert.That(next.Echo("on the pooled connection"), Is.EqualTo("on the pooled connection"));
        Assert.That(host.Counters.Snapshot(), Is.EqualTo(new ServerCountsSnapshot(Connections: 1, TlsHandshakes: 2, SessionsStarted: 2, SessionsEnded: 1, Calls: 2, EndRecords: 1)));
    }

    [Test]
    public async Task AbortIdleSessions_AlsoDropsConnectionsTheClientPooled_AndTheNextOpenConnectsAnew()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);
        var channel = (IClientChannel)factory.Open();
        ((IEchoService)channel).Echo("before close");
        channel.Close(TimeSpan.FromSeconds(2));
        Assert.That(() => host.Counters.SessionsEnded, Is.EqualTo(1).After(2000, 10));

        Assert.That(host.AbortIdleSessions(), Is.EqualTo(1));
        Assert.That(() => host.ActiveConnections, Is.Zero.After(2000, 10));

        var next = factory.Open();
        Assert.That(next.Echo("on a new connection"), Is.EqualTo("on a new connection"));
        Assert.That(host.Counters.Connections, Is.EqualTo(2));
        Assert.That(host.Counters.SessionsEnded, Is.EqualTo(1), "the dropped connection carried no session");
    }

    [Test]
    public async Task AnAbruptClientDisconnect_CountsTheSessionEndedOnce()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);
        var channel = (IClientChannel)factory.Open();
        ((IEchoService)channel).Echo("before abort");

        channel.Abort();

        Assert.That(() => host.ActiveConnections, Is.Zero.After(2000, 10));
        Assert.That(host.Counters.SessionsEnded, Is.EqualTo(1));
    }

    [Test]
    public async Task AbortIdleSessions_MakesTheNextCallOnAnIdleChannelFailWithACommunicationException()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);
        var channel = factory.Open();
        channel.Echo("before abort");

        Assert.That(host.AbortIdleSessions(), Is.EqualTo(1));
        Assert.That(() => host.Counters.SessionsEnded, Is.EqualTo(1).After(2000, 10));

        Assert.Throws(Is.InstanceOf<CommunicationException>(), () => channel.Echo("after abort"));
        Assert.That(((IClientChannel)channel).State, Is.EqualTo(CommunicationState.Faulted));
    }

    [Test]
    public async Task AnIdleClientChannel_DoesNotNoticeAServerAbortUntilItsNextCall()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);
        var channel = factory.Open();
        channel.Echo("before abort");

        host.AbortIdleSessions();
        await Task.Delay(500);

        // The fact the pool's design rests on: a dead idle channel still says Opened; only using it reveals the loss.
        Assert.That(((IClientChannel)channel).State, Is.EqualTo(CommunicationState.Opened));
    }

    [Test]
    public async Task Stop_AbortsEveryConnection_AndANewHostStartsOnTheSamePortWithTheSameCounters()
    {
        var host = await NetTcpTestHost.StartAsync(_certificate);
        int port = host.Port;
        using var factory = new Factory<IEchoService>(_certificate, host.EchoAddress);
        var before = factory.Open();
        before.Echo("before stop");

        await host.StopAsync();

        Assert.That(host.ActiveConnections, Is.Zero);
        Assert.That(host.Counters.SessionsEnded, Is.EqualTo(1));
        Assert.Throws(Is.InstanceOf<CommunicationException>(), () => before.Echo("host is down"));
        Assert.That(((IClientChannel)before).State, Is.EqualTo(CommunicationState.Faulted));

        await using var restarted = await NetTcpTestHost.StartAsync(_certificate, port, host.Counters);
        var after = factory.Open();

        Assert.That(restarted.Port, Is.EqualTo(port));
        Assert.That(after.Echo("after restart"), Is.EqualTo("after restart"));
        Assert.That(restarted.Counters.SessionsStarted, Is.EqualTo(2));
    }

    [Test]
    public async Task AnUnknownViaPath_FailsAtOpenWithEndpointNotFoundException()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, new Uri(host.EchoAddress, "/nowhere"));

        Assert.Throws<EndpointNotFoundException>(() => factory.Open());
        Assert.That(host.Counters.TlsHandshakes, Is.Zero);
        Assert.That(host.Counters.SessionsStarted, Is.Zero);
    }

    [Test]
    public async Task AnActionTheEndpointDoesNotServe_FailsWithActionNotSupportedException()
    {
        await using var host = await NetTcpTestHost.StartAsync(_certificate);
        using var factory = new Factory<IEchoService>(_certificate, host.CounterAddress);
        var channel = factory.Open();

        Assert.Throws<ActionNotSupportedException>(() => channel.Echo("wrong endpoint"));
        Assert.That(host.Counters.Calls, Is.Zero);
    }

    /// <summary>A plain WCF channel factory that trusts only the test certificate; disposing aborts it and its channels.</summary>
    private sealed class Factory<T> : IDisposable
    {
        private readonly ChannelFactory<T> _factory;

        public Factory(X509Certificate2 certificate, Uri address)
        {
            var binding = NetTcpTestHost.CreateBinding();
            binding.OpenTimeout = binding.SendTimeout = binding.CloseTimeout = TimeSpan.FromSeconds(5);
            _factory = new ChannelFactory<T>(binding, NetTcpTestHost.CreateAddress(address));
            TestCertificate.TrustOnly(_factory.Credentials, certificate);
        }

        public T Open()
        {
            T channel = _factory.CreateChannel();
            ((IClientChannel)channel!).Open();
            return channel;
        }

        public void Dispose() => _factory.Abort();
    }
}
