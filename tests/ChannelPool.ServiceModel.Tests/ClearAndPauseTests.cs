using System.IdentityModel.Tokens;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using System.ServiceModel.Security;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;
using ChannelPool.Testing.ServiceModel.Soap;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>
/// The pool controls on real WCF channels: a service's certificate replaced, then a clear; the adapter's fatal-error
/// rule against what the WCF client really throws; pause and resume across every credential pool.
/// </summary>
[TestFixture]
public sealed class ClearAndPauseTests
{
    [Test]
    public async Task TheServicesCertificateReplaced_ClearAsync_RetiresEveryOldChannel_AndNoCallFailsAfterwards()
    {
        using var oldCertificate = TestCertificate.CreateEcdsa();
        using var newCertificate = TestCertificate.CreateEcdsa();
        var oldHost = await NetTcpTestHost.StartAsync(oldCertificate);
        var port = oldHost.Port;
        await using var pool = new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(),
            NetTcpTestHost.CreateAddress(oldHost.EchoAddress),
            new ChannelPoolOptions { PoolSize = 3 },
            factory => TestCertificate.TrustOnly(factory.Credentials, [oldCertificate, newCertificate]));
        await pool.WarmUpAsync(readyChannels: 3);
        await CallAsync(pool, "before the rotation");

        // The rotation: the service restarts on its port with its new certificate.
        await oldHost.StopAsync();
        await using var newHost = await NetTcpTestHost.StartAsync(newCertificate, port);
        var opened = pool.GetSnapshot().TotalOpened;
        await pool.ClearAsync().WaitAsync(TimeSpan.FromSeconds(30));

        Assert.That(pool.GetSnapshot().TotalClosed, Is.GreaterThanOrEqualTo(opened), "when ClearAsync returns, every channel opened before it is closed");
        var failures = new List<Exception>();
        for (var i = 0; i < 20; i++)
        {
            try
            {
                await CallAsync(pool, $"after the rotation {i}");
            }
            catch (CommunicationException ex)
            {
                failures.Add(ex);
            }
        }

        await Task.WhenAll(Enumerable.Range(0, 6).Select(i => Task.Run(() => CallAsync(pool, $"concurrent {i}"))));
        Assert.That(failures, Is.Empty, "no call failed after the clear");
        Assert.That(newHost.Counters.Calls, Is.EqualTo(26), "every call after the clear reached the service with its new certificate");
        Assert.That(newHost.Counters.TlsHandshakes, Is.GreaterThanOrEqualTo(3), "over channels that shook hands with it");
    }

    [Test]
    public async Task AServerCertificateTheClientRejects_FailsTheOpenWithASecurityFailure_AndTheDefaultRuleClearsThePool()
    {
        using var trusted = TestCertificate.CreateEcdsa();
        using var impostor = TestCertificate.CreateEcdsa();
        var logs = new FakeLogCollector();
        using var loggers = new LoggerFactory([new FakeLoggerProvider(logs)]);
        var host = await NetTcpTestHost.StartAsync(trusted);
        var port = host.Port;
        await using var pool = new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(),
            NetTcpTestHost.CreateAddress(host.EchoAddress),
            WithoutRetries(poolSize: 2),
            factory => TestCertificate.TrustOnly(factory.Credentials, trusted),
            loggerFactory: loggers);
        await pool.WarmUpAsync(readyChannels: 2);
        await host.StopAsync();
        await using var impostorHost = await NetTcpTestHost.StartAsync(impostor, port);

        // A larger pool opens one more channel now: against a certificate the client does not trust.
        pool.Reconfigure(WithoutRetries(poolSize: 3));

        await Eventually.That(() => ClearedLog(logs) is not null, () => $"the failed open cleared the pool ({pool.GetSnapshot()})");
        var openError = logs.GetSnapshot().First(r => r.Message.Contains("could not open a channel", StringComparison.Ordinal)).Exception!;
        Assert.That(FatalErrors.IsSecurityFailure(openError), Is.True, $"the WCF client reports a rejected server certificate as a security failure: {openError}");
        Assert.That(ClearedLog(logs)!.Message, Does.Contain($"'{pool.Name}'"));
        await Eventually.That(() => pool.GetSnapshot().TotalClosed == 2, () => $"both channels opened before it retired ({pool.GetSnapshot()})");
        Assert.That(impostorHost.Counters.Calls, Is.Zero);
    }

    [Test]
    public async Task ClearAsync_OnBasicHttps_PutsTheNextCallOnANewTlsConnection()
    {
        await using var service = await TestService.StartAsync(Transport.BasicHttps);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 2 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 2);
        await CallAsync(pool, "before the clear");
        await CallAsync(pool, "before the clear, again");
        var before = service.Counters.Snapshot();

        await pool.ClearAsync().WaitAsync(TimeSpan.FromSeconds(30));
        await CallAsync(pool, "after the clear");

        var after = service.Counters.Snapshot() - before;
        Assert.That(before.TlsHandshakes, Is.EqualTo(1), "the calls before the clear shared the factory's one connection");
        Assert.That(after.TlsHandshakes, Is.EqualTo(1), "the call after the clear shook hands anew: its channel came from a new factory");
    }

    [Test]
    public async Task TenCallsInARowFailingWithAFatalError_ClearThePoolOnce()
    {
        using var trusted = TestCertificate.CreateEcdsa();
        using var impostor = TestCertificate.CreateEcdsa();
        var logs = new FakeLogCollector();
        using var loggers = new LoggerFactory([new FakeLoggerProvider(logs)]);
        var service = await SoapTestHost.StartAsync(trusted);
        var port = service.Port;
        await using var pool = new ServiceChannelPool<IEchoService>(
            SoapTestHost.CreateBasicBinding(),
            SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{port}/basic")),
            WithoutRetries(poolSize: 2),
            factory => TestCertificate.TrustOnly(factory.Credentials, trusted),
            loggerFactory: loggers);
        await CallAsync(pool, "trusted");

        // The certificate rotated to one the client does not trust: every call fails its TLS handshake.
        await service.DisposeAsync();
        await using var rotated = await SoapTestHost.StartAsync(impostor, port);
        var failures = 0;
        for (var i = 0; i < 10; i++)
        {
            try
            {
                await CallAsync(pool, $"untrusted {i}");
            }
            catch (CommunicationException)
            {
                failures++;
            }
        }

        Assert.That(failures, Is.EqualTo(10));
        Assert.That(logs.GetSnapshot().Count(r => r.Id.Id == 18), Is.EqualTo(1), "one wave of fatal errors, one clear");
    }

    [Test]
    public async Task PauseAndResume_ActOnEveryCredentialPool_AndAPoolCreatedWhilePaused_StartsPaused()
    {
        await using var endpoint = await UserNameEndpoint.StartAsync();
        var (pool, bob) = (endpoint.Pool, endpoint.Bob);

        pool.Pause();
        Assert.That(() => pool.Pause(), Throws.InvalidOperationException.With.Message.Contains($"'{pool.Name}' is already paused"));
        var carol = pool.GetPool(TestCredentials.For(pool, TestUsers.Alice, "another password"));

        Assert.That(new[] { pool.DefaultPool, bob, carol }.Select(p => p.GetSnapshot().IsPaused), Has.All.True);
        Assert.That(pool.GetSnapshot().IsPaused, Is.True);
        var error = Assert.Throws<ChannelPoolUnavailableException>(() =>
        {
            using var proxy = new EchoProxy(pool);
            proxy.Echo("while paused");
        });
        Assert.That(error!.Message, Does.Contain("is paused"));

        pool.Resume();
        Assert.That(() => pool.Resume(), Throws.InvalidOperationException.With.Message.Contains($"'{pool.Name}' is not paused"));
        Assert.That(new[] { pool.DefaultPool, bob, carol }.Select(p => p.GetSnapshot().IsPaused), Has.All.False);
        await using var again = new EchoProxy(pool);
        Assert.That(again.Echo("resumed"), Is.EqualTo("resumed"));
    }

    [Test]
    public async Task ClearAsync_ClearsEveryCredentialPool()
    {
        await using var endpoint = await UserNameEndpoint.StartAsync();
        var (pool, bob) = (endpoint.Pool, endpoint.Bob);
        await pool.WarmUpAsync(readyChannels: 1);
        await bob.WarmUpAsync(readyChannels: 1);

        await pool.ClearAsync().WaitAsync(TimeSpan.FromSeconds(30));

        Assert.That(pool.DefaultPool.GetSnapshot().TotalClosed, Is.EqualTo(1));
        Assert.That(bob.GetSnapshot().TotalClosed, Is.EqualTo(1));
    }

    [Test]
    public async Task ClearOrPause_AfterADrain_ThrowsNamingThePool()
    {
        await using var service = await TestService.StartAsync(Transport.UserName);
        var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        await pool.DrainAsync();

        Assert.That(() => pool.ClearAsync(), Throws.InstanceOf<ObjectDisposedException>().With.Message.Contains($"'{pool.Name}' cannot be cleared"));
        Assert.That(() => pool.Pause(), Throws.InstanceOf<ObjectDisposedException>().With.Message.Contains($"'{pool.Name}' cannot be paused"));
    }

    private static IEnumerable<TestCaseData> SecurityFailures()
    {
        yield return new TestCaseData(new SecurityNegotiationException("the TLS handshake failed")).SetName("Fatal: a failed security negotiation");
        yield return new TestCaseData(new MessageSecurityException("the security context token is not known")).SetName("Fatal: a message the service's security rejected");
        yield return new TestCaseData(new CommunicationException("wrapped", new AuthenticationException("remote certificate invalid"))).SetName("Fatal: a TLS authentication failure inside another error");
        yield return new TestCaseData(new SecurityTokenValidationException("certificate not trusted")).SetName("Fatal: a rejected certificate");
    }

    private static IEnumerable<TestCaseData> OtherFailures()
    {
        yield return new TestCaseData(new EndpointNotFoundException("nobody listens")).SetName("Not fatal: the service is down");
        yield return new TestCaseData(new CommunicationObjectAbortedException("connection reset")).SetName("Not fatal: a dropped connection");
        yield return new TestCaseData(new TimeoutException("slow call")).SetName("Not fatal: a timeout");
        yield return new TestCaseData(new FaultException("the service's own answer")).SetName("Not fatal: a service fault");
        yield return new TestCaseData(new SecurityAccessDeniedException("not allowed")).SetName("Not fatal: an authorization refusal");
    }

    [TestCaseSource(nameof(SecurityFailures))]
    public void IsSecurityFailure_RecognisesTheServicesSecurityChanging(Exception error) =>
        Assert.That(FatalErrors.IsSecurityFailure(error), Is.True);

    [TestCaseSource(nameof(OtherFailures))]
    public void IsSecurityFailure_LeavesOneCallsOrOneChannelsTroubleAlone(Exception error) =>
        Assert.That(FatalErrors.IsSecurityFailure(error), Is.False);

    private static ChannelPoolOptions WithoutRetries(int poolSize)
    {
        var options = new ChannelPoolOptions { PoolSize = poolSize };
        options.Resilience.Retry.MaxRetryAttempts = 0;
        return options;
    }

    private static FakeLogRecord? ClearedLog(FakeLogCollector logs) =>
        logs.GetSnapshot().FirstOrDefault(r => r.Message.Contains("cleared after a", StringComparison.Ordinal));

    private static async Task CallAsync(ServiceChannelPool<IEchoService> pool, string text)
    {
        await using var proxy = new EchoProxy(pool);
        Assert.That(proxy.Echo(text), Is.EqualTo(text));
    }

    /// <summary>A UserName service and its pools: the endpoint's own (alice) and bob's.</summary>
    private sealed class UserNameEndpoint(TestService service, ServiceChannelPool<IEchoService> pool) : IAsyncDisposable
    {
        public ServiceChannelPool<IEchoService> Pool { get; } = pool;

        public DefaultChannelPool<IEchoService> Bob { get; } = pool.GetPool(TestCredentials.For(pool, TestUsers.Bob, TestUsers.BobPassword));

        public static async Task<UserNameEndpoint> StartAsync()
        {
            var service = await TestService.StartAsync(Transport.UserName);
            return new UserNameEndpoint(service, new ServiceChannelPool<IEchoService>(
                service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure));
        }

        public async ValueTask DisposeAsync()
        {
            await Pool.DisposeAsync();
            await service.DisposeAsync();
        }
    }
}
