using System.ServiceModel;
using System.ServiceModel.Security;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.SecureConversation;
using ChannelPool.Testing;
using Microsoft.Extensions.Time.Testing;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>
/// The original's scenario, WSHttpBinding with a security context, through the pool against a server that really
/// issues, checks and cancels the tokens. (The drop-in, parallel-use and application-fault tests also run on this
/// binding, through <see cref="Transport.SecureConversation"/>.)
/// </summary>
[TestFixture]
public sealed class SecureConversationTests
{
    [Test]
    public async Task WarmUp_PaysTheNegotiations_AndCallsPayNone()
    {
        await using var service = await TestService.StartAsync(Transport.SecureConversation);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 4 }, service.Configure);

        await pool.WarmUpAsync(readyChannels: 4);
        long negotiatedInWarmUp = service.Counters.Negotiations;

        for (var i = 0; i < 20; i++)
        {
            await using var proxy = new EchoProxy(pool);
            Assert.That(proxy.Echo($"call {i}"), Is.EqualTo($"call {i}"));
        }

        Assert.That(negotiatedInWarmUp, Is.EqualTo(4), "each pre-opened channel negotiated its own security context");
        Assert.That(service.Counters.Negotiations, Is.EqualTo(4), "no caller paid for a negotiation");
        Assert.That(service.Counters.Calls, Is.EqualTo(20));
        Assert.That(service.SoapHost.SecurityContextTokens, Is.EqualTo(4));
    }

    [Test]
    public async Task ClosingThePool_CancelsEveryTokenItNegotiated()
    {
        await using var service = await TestService.StartAsync(Transport.SecureConversation);
        var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 3 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 3);

        await pool.DisposeAsync();

        Assert.That(service.Counters.Cancels, Is.EqualTo(3), "each channel's close sent a cancel the server verified and answered");
        Assert.That(service.SoapHost.SecurityContextTokens, Is.Zero, "the server forgot every token");
    }

    [Test]
    public async Task EachUser_GetsItsOwnPool_AndItsOwnTokens()
    {
        await using var service = await TestService.StartAsync(Transport.SecureConversation);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);

        var seen = new List<string>();
        for (var i = 0; i < 4; i++)
        {
            await using var proxy = new EchoProxy(pool);
            if (i % 2 == 1)
            {
                proxy.ClientCredentials.UserName.UserName = TestUsers.Bob;
                proxy.ClientCredentials.UserName.Password = TestUsers.BobPassword;
            }

            seen.Add(proxy.WhoAmI());
        }

        // WhoAmI answers with the user the server issued the signing token to, so a shared channel would show here.
        Assert.That(seen, Is.EqualTo(new[] { TestUsers.Alice, TestUsers.Bob, TestUsers.Alice, TestUsers.Bob }));
        // The pools may still be refilling in the background; once they are done, every negotiation is a channel's open.
        await Eventually.That(
            () => service.Counters.Negotiations == pool.GetSnapshot().TotalOpened,
            () => $"one negotiation per channel the two pools opened, none per call ({service.Counters.Negotiations} negotiations, {pool.GetSnapshot().TotalOpened} opened)");
    }

    [Test]
    public async Task AWrongPassword_FailsTheOpenWithTheServersReason_AndNoStormOfRetries()
    {
        await using var service = await TestService.StartAsync(Transport.SecureConversation);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, configureFactory: service.Configure);

        await using var proxy = new EchoProxy(pool);
        proxy.ClientCredentials.UserName.UserName = TestUsers.Alice;
        proxy.ClientCredentials.UserName.Password = "wrong";
        // The negotiation is the channel's open, which the pool does: its breaker opens on the failure, and the caller
        // gets the pool's error, whose inner exceptions carry the server's reason.
        var error = Assert.Throws<ChannelPoolUnavailableException>(() => proxy.Echo("let me in"));
        Assert.That(error!.Message, Does.Contain("IEchoService[alice]").And.Contain("MessageSecurityException"));
        Assert.That(error.InnerException, Is.InstanceOf<MessageSecurityException>());
        Assert.That(error.InnerException!.InnerException, Is.InstanceOf<FaultException>());
        Assert.That(error.InnerException.InnerException!.Message, Does.Contain("password").And.Contain(TestUsers.Alice));

        Assert.Throws<ChannelPoolUnavailableException>(() => proxy.Echo("again"), "the open breaker answers at once");
        Assert.That(service.Counters.Negotiations, Is.Zero);
        Assert.That(service.Counters.Calls, Is.Zero, "the service dispatched nothing");
        Assert.That(service.Counters.SecurityFaults, Is.InRange(1, 4), "only the opens already in flight were refused, then the breaker stopped them");
    }

    [Test]
    public async Task AChannelRetiredByItsLifetimeBeforeTheServerDropsItsToken_NeverFailsACall(
        [Values] ServerLimit limit)
    {
        // One clock for the pool and the server. The pool's lifetime (90 s, the default) is below both server limits,
        // which is the rule docs/configuration.md states: the channel is replaced before a caller can get it.
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var service = await TestService.StartAsync(Transport.SecureConversation, secureConversation: Limits(limit, time));
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding,
            service.EchoAddress,
            new ChannelPoolOptions { PoolSize = 1, MaxChannels = 1, LifetimeJitter = 0 },
            service.Configure,
            time);
        await pool.WarmUpAsync(readyChannels: 1);

        time.Advance(TimeSpan.FromSeconds(100));

        await using (var proxy = new EchoProxy(pool))
        {
            Assert.That(proxy.Echo("after the lifetime"), Is.EqualTo("after the lifetime"));
        }

        Assert.That(service.Counters.Negotiations, Is.EqualTo(2), "the expired channel was replaced by a new one with a new token");
        Assert.That(service.Counters.SecurityFaults, Is.Zero, "no call was refused");
        await Eventually.That(() => service.Counters.Cancels == 1, "the retired channel cancelled its token while the server still knew it");
    }

    [Test]
    public async Task ATokenTheServerDroppedWhileItsChannelIdled_FailsOneCallClearly_AndTheNextGetsANewChannel(
        [Values] ServerLimit limit)
    {
        // The pool's lifetime (5 minutes) is longer than the server's limits (2 minutes): the rule is broken on purpose.
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var service = await TestService.StartAsync(Transport.SecureConversation, secureConversation: Limits(limit, time));
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding,
            service.EchoAddress,
            new ChannelPoolOptions { PoolSize = 1, MaxChannels = 1, LifetimeJitter = 0, ChannelLifetime = TimeSpan.FromMinutes(5) },
            service.Configure,
            time);
        await pool.WarmUpAsync(readyChannels: 1);

        time.Advance(TimeSpan.FromMinutes(3));

        await using (var proxy = new EchoProxy(pool))
        {
            var error = Assert.Throws<MessageSecurityException>(() => proxy.Echo("too late"));
            Assert.That(error!.InnerException, Is.InstanceOf<FaultException>());
            Assert.That(error.InnerException!.Message, Does.Contain(limit == ServerLimit.TokenLifetime ? "expired" : "inactivity timeout"));
        }

        await using (var proxy = new EchoProxy(pool))
        {
            Assert.That(proxy.Echo("next caller"), Is.EqualTo("next caller"), "the failed channel was retired, not handed out again");
        }

        Assert.That(service.Counters.Negotiations, Is.EqualTo(2));
        Assert.That(service.Counters.Calls, Is.EqualTo(1), "the refused call never reached the operation");
    }

    public enum ServerLimit
    {
        TokenLifetime,
        InactivityTimeout,
    }

    private static SecureConversationOptions Limits(ServerLimit limit, TimeProvider time) => new()
    {
        TokenLifetime = limit == ServerLimit.TokenLifetime ? TimeSpan.FromMinutes(2) : TimeSpan.FromHours(10),
        InactivityTimeout = limit == ServerLimit.InactivityTimeout ? TimeSpan.FromMinutes(2) : TimeSpan.FromHours(10),
        TimeProvider = time,
    };
}
