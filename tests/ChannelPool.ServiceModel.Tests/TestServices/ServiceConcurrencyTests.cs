using System.Diagnostics;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using System.ServiceModel.Channels;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;
using ChannelPool.Testing.ServiceModel.SecureConversation;
using ChannelPool.Testing.ServiceModel.Soap;

namespace ChannelPool.ServiceModel.Tests.TestServices;

/// <summary>
/// The test hosts serve one session's calls as WCF does: one at a time under <see cref="ServiceConcurrency.Single"/>
/// (WCF's defaults), at once under <see cref="ServiceConcurrency.Multiple"/>, on both session-based endpoints: net.tcp
/// and WS-SecureConversation. Calls use <see cref="IEchoService.EchoAfterAsync"/>, whose service time is known, through
/// the plain WCF client (no pool).
/// </summary>
[TestFixture]
[CancelAfter(20_000)]
public sealed class ServiceConcurrencyTests
{
    private const int ServiceTime = 400;

    // Timers may fire up to a tick early against the stopwatch: a lower bound gives them this much.
    private static readonly TimeSpan TimerSlack = TimeSpan.FromMilliseconds(20);

    private X509Certificate2 _certificate = null!;

    public enum SessionEndpoint
    {
        NetTcp,
        SecureConversation,
    }

    [OneTimeSetUp]
    public void CreateCertificate() => _certificate = TestCertificate.Create();

    [OneTimeTearDown]
    public void DisposeCertificate() => _certificate.Dispose();

    [TestCase(SessionEndpoint.NetTcp)]
    [TestCase(SessionEndpoint.SecureConversation)]
    public async Task Single_ServesASessionsCallsOneAfterAnother_SoTwoAtOnceTakeTheSumOfTheirServiceTimes(SessionEndpoint endpoint)
    {
        await using var service = await Service.StartAsync(endpoint, ServiceConcurrency.Single, _certificate);
        var channel = service.OpenChannel();

        var started = Stopwatch.StartNew();
        var replies = await Task.WhenAll(channel.EchoAfterAsync("first", ServiceTime), channel.EchoAfterAsync("second", ServiceTime));
        var elapsed = started.Elapsed;

        Assert.That(replies, Is.EquivalentTo(new[] { "first", "second" }));
        Assert.That(elapsed, Is.GreaterThanOrEqualTo(TimeSpan.FromMilliseconds(2 * ServiceTime) - TimerSlack), "the second call waited for the first");
        Assert.That(service.Counters.PeakCallsPerSession, Is.EqualTo(1));
        Assert.That(service.Counters.Calls, Is.EqualTo(2));
    }

    [TestCase(SessionEndpoint.NetTcp)]
    [TestCase(SessionEndpoint.SecureConversation)]
    public async Task Single_AnswersAShortCallBehindALongOneOnTheSameSession(SessionEndpoint endpoint)
    {
        await using var service = await Service.StartAsync(endpoint, ServiceConcurrency.Single, _certificate);
        var channel = service.OpenChannel();

        var started = Stopwatch.StartNew();
        var slow = channel.EchoAfterAsync("slow", ServiceTime);
        await Task.Delay(50);
        var quick = await channel.EchoAfterAsync("quick", 0);

        Assert.That(quick, Is.EqualTo("quick"));
        Assert.That(started.Elapsed, Is.GreaterThanOrEqualTo(TimeSpan.FromMilliseconds(ServiceTime) - TimerSlack), "the quick call was taken after the slow one's reply");
        Assert.That(slow.IsCompletedSuccessfully, Is.True);
        Assert.That(await slow, Is.EqualTo("slow"));
    }

    [TestCase(SessionEndpoint.NetTcp)]
    [TestCase(SessionEndpoint.SecureConversation)]
    public async Task Multiple_ServesASessionsCallsAtOnce_SoAShortCallOvertakesALongOne(SessionEndpoint endpoint)
    {
        await using var service = await Service.StartAsync(endpoint, ServiceConcurrency.Multiple, _certificate);
        var channel = service.OpenChannel();

        var slow = channel.EchoAfterAsync("slow", 3 * ServiceTime);
        await Task.Delay(50);
        var quick = await channel.EchoAfterAsync("quick", 0);

        Assert.That(quick, Is.EqualTo("quick"));
        Assert.That(slow.IsCompleted, Is.False, "the quick call's reply came back while the slow call still ran");
        Assert.That(await slow, Is.EqualTo("slow"));
        Assert.That(service.Counters.PeakCallsPerSession, Is.EqualTo(2));
    }

    [TestCase(SessionEndpoint.NetTcp)]
    [TestCase(SessionEndpoint.SecureConversation)]
    public async Task Multiple_OverlapsTwoCallsOnOneSession(SessionEndpoint endpoint)
    {
        await using var service = await Service.StartAsync(endpoint, ServiceConcurrency.Multiple, _certificate);
        var channel = service.OpenChannel();
        await channel.EchoAfterAsync("warm", 0);

        var replies = await Task.WhenAll(channel.EchoAfterAsync("first", 2 * ServiceTime), channel.EchoAfterAsync("second", 2 * ServiceTime));

        // The host's own count, not the wall clock, says the two ran at once: a loaded machine can stretch both calls
        // past the sum of their service times (2.05 s against 1.6 s at a load average of 50) and still overlap them.
        Assert.That(replies, Is.EquivalentTo(new[] { "first", "second" }));
        Assert.That(service.Counters.PeakCallsPerSession, Is.EqualTo(2), "the session's two calls were in the service at once");
    }

    [TestCase(SessionEndpoint.NetTcp)]
    [TestCase(SessionEndpoint.SecureConversation)]
    public async Task Single_HoldsCallsBackPerSessionOnly_SoACallOnAnotherSessionOvertakes(SessionEndpoint endpoint)
    {
        await using var service = await Service.StartAsync(endpoint, ServiceConcurrency.Single, _certificate);
        var first = service.OpenChannel();
        var second = service.OpenChannel();

        var slow = first.EchoAfterAsync("slow", 3 * ServiceTime);
        await Task.Delay(50);
        var quick = await second.EchoAfterAsync("quick", 0);

        Assert.That(quick, Is.EqualTo("quick"));
        Assert.That(slow.IsCompleted, Is.False, "the other session's call was not held behind this one");
        Assert.That(await slow, Is.EqualTo("slow"));
        Assert.That(service.Counters.PeakCallsPerSession, Is.EqualTo(1));
    }

    [Test]
    public async Task ANetTcpSessionWithACallInProgressUnderMultiple_IsNotIdleUntilTheCallEnds()
    {
        await using var service = await Service.StartAsync(SessionEndpoint.NetTcp, ServiceConcurrency.Multiple, _certificate);
        var channel = service.OpenChannel();
        await channel.EchoAfterAsync("warm", 0);

        var slow = channel.EchoAfterAsync("slow", 3 * ServiceTime);
        await Eventually.That(() => service.Counters.SessionCallsStarted == 2, "the slow call is in the service");
        int abortedDuringCall = service.NetTcp.AbortIdleSessions();
        Assert.That(await slow, Is.EqualTo("slow"));

        Assert.That(abortedDuringCall, Is.Zero);

        // The reply reaches the client just before the host counts the call done, so the session turns idle soon after.
        var abortedAfter = 0;
        await Eventually.That(() => (abortedAfter += service.NetTcp.AbortIdleSessions()) == 1, "the session, its call over, was aborted as idle");
    }

    [TestCase(SessionEndpoint.NetTcp, -1)]
    [TestCase(SessionEndpoint.NetTcp, TestContract.MaxServiceTimeMilliseconds + 1)]
    [TestCase(SessionEndpoint.SecureConversation, -1)]
    [TestCase(SessionEndpoint.SecureConversation, TestContract.MaxServiceTimeMilliseconds + 1)]
    public async Task EchoAfter_RefusesAServiceTimeOutOfRange_WithAFaultThatNamesTheRangeAndTheValue(SessionEndpoint endpoint, int milliseconds)
    {
        await using var service = await Service.StartAsync(endpoint, ServiceConcurrency.Single, _certificate);
        var channel = service.OpenChannel();

        var fault = Assert.ThrowsAsync<FaultException>(() => channel.EchoAfterAsync("too long", milliseconds));

        Assert.That(fault!.Reason.ToString(), Does.Contain("0 to 60000 ms").And.Contain($"asked for {milliseconds} ms"));
        Assert.That(await channel.EchoAfterAsync("still usable", 0), Is.EqualTo("still usable"));
    }

    [Test]
    public void AConcurrencyThatIsNotAServiceConcurrency_IsRefusedAtStart_WithTheChoices()
    {
        var netTcp = Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => NetTcpTestHost.StartAsync(_certificate, concurrency: (ServiceConcurrency)7));
        var soap = Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => SoapTestHost.StartAsync(_certificate, secureConversation: new() { Concurrency = (ServiceConcurrency)7 }));

        Assert.That(netTcp!.Message, Does.Contain("Single or Multiple").And.Contain("7"));
        Assert.That(netTcp.ParamName, Is.EqualTo("concurrency"));
        Assert.That(soap!.Message, Does.Contain("Single or Multiple").And.Contain("7"));
    }

    /// <summary>One session-based endpoint, served with a given concurrency, and a plain WCF factory for it.</summary>
    private sealed class Service : IAsyncDisposable
    {
        private readonly NetTcpTestHost? _netTcp;
        private readonly SoapTestHost? _soap;
        private readonly ChannelFactory<IEchoService> _factory;

        private Service(NetTcpTestHost? netTcp, SoapTestHost? soap, X509Certificate2 certificate)
        {
            _netTcp = netTcp;
            _soap = soap;
            (Binding binding, EndpointAddress address) = netTcp is not null
                ? ((Binding)NetTcpTestHost.CreateBinding(), NetTcpTestHost.CreateAddress(netTcp.EchoAddress))
                : (SoapTestHost.CreateSecureConversationBinding(), SoapTestHost.CreateAddress(soap!.SecureConversationAddress));
            binding.OpenTimeout = binding.SendTimeout = binding.CloseTimeout = TimeSpan.FromSeconds(10);
            _factory = new ChannelFactory<IEchoService>(binding, address);
            TestCertificate.TrustOnly(_factory.Credentials, certificate);
            _factory.Credentials.UserName.UserName = TestUsers.Alice;
            _factory.Credentials.UserName.Password = TestUsers.AlicePassword;
        }

        public ServerCounters Counters => _netTcp?.Counters ?? _soap!.Counters;

        public NetTcpTestHost NetTcp => _netTcp ?? throw new InvalidOperationException("Not a net.tcp service.");

        public static async Task<Service> StartAsync(SessionEndpoint endpoint, ServiceConcurrency concurrency, X509Certificate2 certificate) => endpoint == SessionEndpoint.NetTcp
            ? new Service(await NetTcpTestHost.StartAsync(certificate, concurrency: concurrency), null, certificate)
            : new Service(null, await SoapTestHost.StartAsync(certificate, secureConversation: new SecureConversationOptions { Concurrency = concurrency }), certificate);

        /// <summary>Opens a channel: one session (net.tcp) or one security context (WS-SecureConversation).</summary>
        public IEchoService OpenChannel()
        {
            IEchoService channel = _factory.CreateChannel();
            ((IClientChannel)channel).Open();
            return channel;
        }

        public async ValueTask DisposeAsync()
        {
            _factory.Abort();
            if (_netTcp is not null)
            {
                await _netTcp.DisposeAsync();
            }

            if (_soap is not null)
            {
                await _soap.DisposeAsync();
            }
        }
    }
}
