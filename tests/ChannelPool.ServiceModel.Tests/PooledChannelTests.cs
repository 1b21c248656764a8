using System.ServiceModel;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing;
using Microsoft.Extensions.Time.Testing;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>Pre-opening, lease modes, lifetime and call failures, over real channels to real services.</summary>
[TestFixture]
public sealed class PooledChannelTests
{
    [Test]
    public async Task WarmUp_PaysTheHandshakes_AndCallsPayNone_OnNetTcp()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 4 }, service.Configure);

        await pool.WarmUpAsync(readyChannels: 4);
        var afterWarmUp = service.Counters.Snapshot();

        for (var i = 0; i < 30; i++)
        {
            await using var proxy = new EchoProxy(pool);
            Assert.That(proxy.Echo("x"), Is.EqualTo("x"));
        }

        var duringCalls = service.Counters.Snapshot() - afterWarmUp;
        Assert.That(afterWarmUp.TlsHandshakes, Is.EqualTo(4), "each pre-opened channel did its own TLS handshake during warm-up");
        Assert.That(afterWarmUp.SessionsStarted, Is.EqualTo(4));
        Assert.That(duringCalls.TlsHandshakes, Is.Zero, "no caller paid for a handshake");
        Assert.That(duringCalls.Calls, Is.EqualTo(30));
    }

    [Test]
    public async Task AContractThatRequiresSessions_DefaultsToSingleUse_AndOthersToReuse()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var counters = new ServiceChannelPool<ISessionCounter>(service.Binding, service.CounterAddress, configureFactory: service.Configure);
        await using var echoes = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, configureFactory: service.Configure);
        await using var overridden = new ServiceChannelPool<ISessionCounter>(
            service.Binding, service.CounterAddress, new ChannelPoolOptions { LeaseMode = LeaseMode.Reuse }, service.Configure);

        Assert.That(counters.LeaseMode, Is.EqualTo(LeaseMode.SingleUse));
        Assert.That(echoes.LeaseMode, Is.EqualTo(LeaseMode.Reuse));
        Assert.That(overridden.LeaseMode, Is.EqualTo(LeaseMode.Reuse));
    }

    [Test]
    public async Task SingleUse_GivesEveryProxyAFreshServerSession_WhereReuseWouldLeakOne()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        var options = new ChannelPoolOptions { PoolSize = 1, MaxChannels = 1 };
        await using var singleUse = new ServiceChannelPool<ISessionCounter>(service.Binding, service.CounterAddress, options, service.Configure);
        await using var reuse = new ServiceChannelPool<ISessionCounter>(
            service.Binding, service.CounterAddress, new ChannelPoolOptions { PoolSize = 1, MaxChannels = 1, LeaseMode = LeaseMode.Reuse }, service.Configure);

        var singleUseCounts = new List<int>();
        var reuseCounts = new List<int>();
        for (var i = 0; i < 3; i++)
        {
            await using (var proxy = new CounterProxy(singleUse))
            {
                singleUseCounts.Add(proxy.Increment());
            }

            await using (var proxy = new CounterProxy(reuse))
            {
                reuseCounts.Add(proxy.Increment());
            }
        }

        Assert.That(singleUseCounts, Is.EqualTo(new[] { 1, 1, 1 }), "each single-use proxy started a new server session");
        Assert.That(reuseCounts, Is.EqualTo(new[] { 1, 2, 3 }), "reused channels carry one caller's session state to the next");
        await Eventually.That(() => service.Counters.SessionsEnded >= 3, "the single-use channels' sessions were closed");
    }

    [Test]
    public async Task ManyProxiesInParallel_AllGetAnswers_InBothLeaseModes(
        [Values(Transport.NetTcp, Transport.BasicHttps, Transport.UserName, Transport.SecureConversation)] Transport transport,
        [Values] LeaseMode mode)
    {
        await using var service = await TestService.StartAsync(transport);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 8, LeaseMode = mode }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 4);

        var replies = await Task.WhenAll(Enumerable.Range(0, 8).Select(worker => Task.Run(async () =>
        {
            var mine = new List<string>();
            for (var i = 0; i < 10; i++)
            {
                await using var proxy = new EchoProxy(pool);
                await proxy.OpenAsync();
                mine.Add(proxy.Echo($"{worker}:{i}"));
            }

            return mine;
        })));

        Assert.That(replies.SelectMany(r => r), Is.EquivalentTo(Enumerable.Range(0, 8).SelectMany(w => Enumerable.Range(0, 10).Select(i => $"{w}:{i}"))));
        var snapshot = pool.GetSnapshot();
        Assert.That(snapshot.Leased, Is.Zero, "every proxy gave its channel back");
        if (mode == LeaseMode.SingleUse)
        {
            Assert.That(snapshot.TotalOpened, Is.GreaterThanOrEqualTo(80), "single use opened a channel per proxy");
        }
        else
        {
            Assert.That(snapshot.TotalOpened, Is.LessThanOrEqualTo(16), "reuse opened channels for the concurrency, not per call");
        }
    }

    [Test]
    public async Task LifetimeEviction_EndsTheServerSessionWithAnEndRecord()
    {
        var time = new FakeTimeProvider();
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding,
            service.EchoAddress,
            new ChannelPoolOptions { PoolSize = 3, ChannelLifetime = TimeSpan.FromSeconds(60), LifetimeJitter = 0, CleanupInterval = TimeSpan.FromSeconds(10) },
            service.Configure,
            time);
        await pool.WarmUpAsync(readyChannels: 3);
        Assert.That(service.Counters.SessionsEnded, Is.Zero);

        time.Advance(TimeSpan.FromSeconds(61));

        await Eventually.That(() => service.Counters.EndRecords >= 3, () => $"the three expired channels sent end records ({service.Counters.Snapshot()})");
        await Eventually.That(() => pool.GetSnapshot().Idle == 3, "the pool refilled with fresh channels");
        Assert.That(service.Counters.SessionsStarted, Is.EqualTo(6));
    }

    [Test]
    public async Task AnApplicationFault_LeavesTheChannelInThePool([Values] Transport transport)
    {
        await using var service = await TestService.StartAsync(transport);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1, MaxChannels = 1 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 1);

        await using (var proxy = new EchoProxy(pool))
        {
            var fault = Assert.Throws<FaultException>(() => proxy.Fail("no such order"));
            Assert.That(fault!.Message, Does.Contain("no such order"));
            Assert.That(proxy.State, Is.EqualTo(CommunicationState.Opened));
        }

        await using (var proxy = new EchoProxy(pool))
        {
            Assert.That(proxy.Echo("still fine"), Is.EqualTo("still fine"));
        }

        Assert.That(pool.GetSnapshot().TotalOpened, Is.EqualTo(1), "the faulted call did not cost the channel");
    }

    [Test]
    public async Task ATransportFailure_DiscardsTheChannel_EvenWhenWcfStillCallsItOpened([Values(Transport.BasicHttps, Transport.WsHttps)] Transport transport)
    {
        await using var service = await TestService.StartAsync(transport);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1, MaxChannels = 1 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 1);
        await service.StopAsync();

        await using (var proxy = new EchoProxy(pool))
        {
            // Reading InnerChannel pins the channel to the proxy, so the failed call is seen on that very channel.
            var channel = proxy.InnerChannel;
            Assert.Throws(Is.InstanceOf<CommunicationException>().And.Not.InstanceOf<FaultException>(), () => proxy.Echo("lost"));
            Assert.That(channel.State, Is.EqualTo(CommunicationState.Opened), "an HTTP channel stays Opened after a failed request");
            Assert.That(proxy.State, Is.EqualTo(CommunicationState.Faulted), "but the proxy reports it broken");
        }

        await Eventually.That(() => pool.GetSnapshot().TotalClosed >= 1, "the broken channel was discarded at release");
        await service.StartAsync();
        await using (var proxy = new EchoProxy(pool))
        {
            Assert.That(proxy.Echo("back"), Is.EqualTo("back"));
        }
    }

    [Test]
    public async Task OneProxySharedByManyThreads_LeasesForEachCall_AndEveryCallGetsItsOwnAnswer()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 4 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 4);
        var shared = new EchoProxy(pool);

        // Dedicated threads: the WCF client's synchronous calls block a thread each, and 16 blocked pool threads on two
        // cores would measure the thread pool's injection rate instead of the proxy.
        var replies = new string[16];
        var threads = Enumerable.Range(0, replies.Length).Select(i => new Thread(() => replies[i] = shared.Echo($"call {i}"))).ToList();
        threads.ForEach(t => t.Start());
        threads.ForEach(t => t.Join());

        Assert.That(replies, Is.EqualTo(Enumerable.Range(0, replies.Length).Select(i => $"call {i}")));
        Assert.That(pool.GetSnapshot().Leased, Is.Zero, "a lease per operation: the proxy holds no channel between calls");
        Assert.That(service.Counters.Calls, Is.EqualTo(16));
        shared.Close();
    }
}
