using System.ServiceModel;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing;
using Microsoft.Extensions.Time.Testing;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>What callers see when the service drops sessions, goes down and comes back.</summary>
[TestFixture]
public sealed class ServerFailureTests
{
    [Test]
    public async Task ASessionTheServerAbortedWhileIdle_IsNeverHandedOut()
    {
        var time = new FakeTimeProvider();
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 3 }, service.Configure, time);
        await pool.WarmUpAsync(readyChannels: 3);

        Assert.That(service.NetTcpHost.AbortIdleSessions(), Is.EqualTo(3));
        time.Advance(TimeSpan.FromSeconds(1));

        for (var i = 0; i < 3; i++)
        {
            await using var proxy = new EchoProxy(pool);
            Assert.That(proxy.Echo($"after abort {i}"), Is.EqualTo($"after abort {i}"), "no caller got a channel whose session was gone");
        }

        Assert.That(pool.GetSnapshot().TotalClosed, Is.GreaterThanOrEqualTo(3), "the three dead channels were discarded, not leased");
    }

    [Test]
    public async Task TheCleanupTimer_ReplacesSessionsTheServerDropped_BeforeAnyoneAsks()
    {
        var time = new FakeTimeProvider();
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding,
            service.EchoAddress,
            new ChannelPoolOptions { PoolSize = 3, CleanupInterval = TimeSpan.FromSeconds(5) },
            service.Configure,
            time);
        await pool.WarmUpAsync(readyChannels: 3);
        service.NetTcpHost.AbortIdleSessions();

        time.Advance(TimeSpan.FromSeconds(6));

        await Eventually.That(
            () => service.Counters.SessionsStarted == 6 && pool.GetSnapshot().Idle == 3,
            () => $"three fresh sessions replace the dropped ones ({service.Counters.Snapshot()}, pool {pool.GetSnapshot()})");
    }

    [Test]
    public async Task WhileTheServerIsDown_CallersFailFast_AndAfterItReturnsThePoolRefillsByItself()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        var options = new ChannelPoolOptions { PoolSize = 2, AcquireTimeout = TimeSpan.FromSeconds(30) };
        options.Resilience.CircuitBreaker.BreakDuration = TimeSpan.FromSeconds(1);
        options.Resilience.Retry.Delay = TimeSpan.FromMilliseconds(50);
        var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, options, service.Configure);
        await pool.WarmUpAsync(readyChannels: 2);

        await service.StopAsync();
        await Task.Delay(FailureTrackingChannel<IEchoService>.ProbeAfterIdle * 2);

        var down = Assert.Throws<ChannelPoolUnavailableException>(() =>
        {
            using var proxy = new EchoProxy(pool);
            proxy.Echo("server is down");
        });
        Assert.That(down!.Message, Does.Contain(pool.Name), "the error names the pool");
        Assert.That(down.InnerException, Is.InstanceOf<CommunicationException>().Or.InstanceOf<TimeoutException>(), "and carries the last open error");

        await service.StartAsync();
        await Eventually.That(() => pool.GetSnapshot().Idle == 2, () => $"the pool refilled on its own ({pool.GetSnapshot()})");

        var failures = 0;
        for (var i = 0; i < 10; i++)
        {
            try
            {
                await using var proxy = new EchoProxy(pool);
                Assert.That(proxy.Echo("back"), Is.EqualTo("back"));
            }
            catch (CommunicationException)
            {
                failures++;
            }
        }

        Assert.That(failures, Is.Zero, "no faulted channel reached a caller after the server returned");

        await pool.DisposeAsync();
        await Eventually.That(
            () => service.NetTcpHost.ActiveConnections == 0 && service.Counters.ActiveSessions == 0,
            () => $"nothing leaked: every connection and session is closed ({service.NetTcpHost.ActiveConnections} connections, {service.Counters.Snapshot()})");
        Assert.That(pool.GetSnapshot().Leased, Is.Zero);
    }
}
