using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>Duplex sessions pre-opened and handed out by the pool engine.</summary>
public class PooledSessionTests
{
    [Test]
    public async Task Pool_PreOpensDuplexSessions_LeasesThemReadyToUse_AndClosesThemAtDrain()
    {
        await using var server = await DuplexTestServer.StartAsync();
        server.Recorder.Echo = true;
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.Duplex, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        var pool = new DefaultChannelPool<DuplexClientSession>(new PollingDuplexChannelFactory(client), new ChannelPoolOptions { Name = "duplex", PoolSize = 4 });

        await pool.WarmUpAsync().Within();
        Assert.That(server.Recorder.Sessions, Has.Count.EqualTo(4), "the sessions were opened before any caller asked");

        for (var call = 0; call < 10; call++)
        {
            await using var lease = await pool.AcquireAsync().Within();
            await lease.Channel.SendAsync(DuplexMessage.FromJson(new { call }));
            var echo = await lease.Channel.ReceiveAsync().AsTask().Within();
            Assert.That(echo.Message!.ToString(), Is.EqualTo($"{{\"call\":{call}}}"));
        }

        Assert.That(server.Recorder.Sessions, Has.Count.EqualTo(4), "leases reused the pre-opened sessions");
        await pool.DisposeAsync();
        await Eventually.That(() => server.Recorder.Ended.Count == 4, "every pooled session was closed at drain");
        Assert.That(server.Recorder.Ended.Values, Has.All.EqualTo(DuplexSessionEndReason.ClosedByClient));
    }

    [Test]
    public async Task SessionThatFaults_IsNeverHandedOutAgain()
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.Duplex, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        await using var pool = new DefaultChannelPool<DuplexClientSession>(new PollingDuplexChannelFactory(client), new ChannelPoolOptions { Name = "duplex", PoolSize = 2, MaxChannels = 2 });
        await pool.WarmUpAsync().Within();
        var doomed = server.Recorder.Sessions.Values.First();

        var client1 = await LeaseAllAsync(pool);
        var doomedOnClient = client1.Single(s => s.Id == doomed.Id);
        doomed.Close();
        await Eventually.That(() => doomedOnClient.State == DuplexClientSessionState.Faulted, "the client's poll learned the session ended");

        // Both sessions leased at once each time, so a lease meets the faulted one whichever idle order the pool uses.
        for (var i = 0; i < 4; i++)
        {
            var sessions = await LeaseAllAsync(pool);
            Assert.That(sessions.Select(s => s.Id), Has.None.EqualTo(doomed.Id), "the faulted session is retired at lease, never handed out");
            Assert.That(sessions.Select(s => s.State), Is.All.EqualTo(DuplexClientSessionState.Open));
        }

        await Eventually.That(() => server.Recorder.Sessions.Count == 3, "a replacement was opened in the background");
    }

    private static async Task<List<DuplexClientSession>> LeaseAllAsync(DefaultChannelPool<DuplexClientSession> pool)
    {
        var leases = new List<ChannelLease<DuplexClientSession>>();
        for (var i = 0; i < pool.PoolSize; i++)
        {
            leases.Add(await pool.AcquireAsync().Within());
        }

        var sessions = leases.Select(l => l.Channel).ToList();
        leases.ForEach(l => l.Dispose());
        return sessions;
    }
}
