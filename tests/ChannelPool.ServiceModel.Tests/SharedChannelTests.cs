using System.ServiceModel;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing;
using Microsoft.Extensions.Options;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>Several proxies on one pooled channel at once (<see cref="ChannelPoolOptions.MaxLeasesPerChannel"/>), over real net.tcp.</summary>
[TestFixture]
public sealed class SharedChannelTests
{
    [Test]
    public async Task ProxiesUpToMaxLeasesPerChannel_CallConcurrentlyOverOneSession()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IAsyncEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 2, RefillThreshold = 0, MaxLeasesPerChannel = 8 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 2);
        var warm = service.Counters.Snapshot();

        var proxies = Enumerable.Range(0, 8).Select(_ => new AsyncEchoProxy(pool)).ToList();
        await Task.WhenAll(proxies.Select(p => p.OpenAsync()));
        var whileHeld = pool.GetSnapshot();
        var replies = await Task.WhenAll(proxies.Select(async (p, i) =>
        {
            var mine = new List<string>();
            for (var n = 0; n < 20; n++)
            {
                mine.Add(await p.EchoAsync($"{i}:{n}"));
            }

            return mine;
        }));
        var channels = proxies.Select(p => p.InnerChannel).Distinct().Count();
        proxies.ForEach(p => p.Close());

        var duringCalls = service.Counters.Snapshot() - warm;
        Assert.That(channels, Is.EqualTo(1), "all eight proxies leased the same channel");
        Assert.That(whileHeld.Leased, Is.EqualTo(1), $"one channel leased, eight leases on it: {whileHeld}");
        Assert.That(replies.SelectMany(r => r), Is.EquivalentTo(Enumerable.Range(0, 8).SelectMany(i => Enumerable.Range(0, 20).Select(n => $"{i}:{n}"))));
        Assert.That(duringCalls.Calls, Is.EqualTo(160));
        Assert.That(duringCalls.SessionsStarted, Is.Zero);
        Assert.That(pool.GetSnapshot() is { Leased: 0, Idle: 2 }, Is.True, $"the shared channel went back to idle: {pool.GetSnapshot()}");
    }

    [Test]
    public async Task ASharedChannelWhoseSessionDied_FailsItsHolders_AndTheNextProxyGetsAFreshOne()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1, MaxChannels = 2, MaxLeasesPerChannel = 4 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 1);
        var first = new EchoProxy(pool);
        var second = new EchoProxy(pool);
        await first.OpenAsync();
        await second.OpenAsync();
        var dead = first.InnerChannel;

        Assert.That(service.NetTcpHost.AbortIdleSessions(), Is.EqualTo(1));
        Assert.That(() => first.Echo("a"), Throws.InstanceOf<CommunicationException>());
        var joinedAfterFailure = new EchoProxy(pool);
        await joinedAfterFailure.OpenAsync();
        var afterFailure = joinedAfterFailure.InnerChannel;
        Assert.That(() => second.Echo("b"), Throws.InstanceOf<CommunicationException>(), "the other holder was on the same dead connection");
        first.Close();
        second.Close();

        await using var next = new EchoProxy(pool);
        Assert.That(next.Echo("after"), Is.EqualTo("after"));
        Assert.That(afterFailure, Is.Not.SameAs(dead), "no proxy joins a channel a call broke");
        Assert.That(next.InnerChannel, Is.Not.SameAs(dead));
        Assert.That(joinedAfterFailure.Echo("joined"), Is.EqualTo("joined"));
        joinedAfterFailure.Close();
        await Eventually.That(() => pool.GetSnapshot().TotalClosed >= 1, () => $"the dead channel was evicted ({pool.GetSnapshot()})");
    }

    [Test]
    public async Task SharingTheChannelsOfAContractThatRequiresSessions_IsRefusedWithTheReason()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);

        Assert.That(
            () => new ServiceChannelPool<ISessionCounter>(
                service.Binding, service.CounterAddress, new ChannelPoolOptions { MaxLeasesPerChannel = 2, LeaseMode = LeaseMode.Reuse }, service.Configure),
            Throws.TypeOf<OptionsValidationException>()
                .With.Message.Contains("MaxLeasesPerChannel must be 1 for ISessionCounter")
                .And.Message.Contains("requires sessions")
                .And.Message.Contains("it was 2"));
    }
}
