using System.Net;
using ChannelPool.PollingDuplex.Redis;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>The Redis endpoints record the same <c>pollingduplex.*</c> instruments as the in-memory ones, with the same tags.</summary>
public class RedisTelemetryTests
{
    [Test]
    public async Task RedisEndpoints_CountPollsByOutcome_AndReceivedMessages_TaggedWithTheEndpoint()
    {
        using var measured = new EndpointMetrics("/pubsub");
        await using var cluster = await StartAsync(nodes: 3, o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(200));
        using var http = DuplexCluster.CreateHttpClient();
        var subscriber = await RawSession.OpenAsync(http, cluster.PubSub);
        using (await subscriber.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n"))
        {
        }

        using (var empty = await subscriber.PollAsync(0))
        {
            Assert.That(empty.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        var publisher = await RawSession.OpenAsync(http, cluster.PubSub);
        using (await publisher.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"t\",\"data\":1}}\n"))
        {
        }

        using (var delivered = await subscriber.PollAsync(0))
        {
            Assert.That(delivered.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        await Eventually.That(() => measured["pollingduplex.polls messages"] == 1, () => $"the delivering poll was counted: {measured}");
        Assert.That(measured["pollingduplex.polls empty"], Is.EqualTo(1));
        Assert.That(measured["pollingduplex.messages.received"], Is.EqualTo(2), "the subscribe and the publish");
    }

    [Test]
    public async Task RedisStores_CountOpensEndsDeliveriesRedeliveriesAndDrops_AndReportTheSessionsByState()
    {
        using var measured = new EndpointMetrics("/pubsub");
        await using var cluster = await StartAsync(nodes: 1, o =>
        {
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(200);
            o.FirstPollTimeout = TimeSpan.FromMilliseconds(400);
            o.MaxPendingMessagesPerSession = 3;
            o.OverflowPolicy = DuplexOverflowPolicy.GapMarker;
        });
        using var http = DuplexCluster.CreateHttpClient();
        var subscriber = await RawSession.OpenAsync(http, cluster.PubSub);
        (await subscriber.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n")).Dispose();
        (await subscriber.PollAsync(0)).Dispose();
        var publisher = await RawSession.OpenAsync(http, cluster.PubSub);
        (await publisher.PollAsync(0)).Dispose();
        (await publisher.SendTextAsync(string.Concat(Enumerable.Range(1, 5).Select(i => $"{{\"seq\":{i},\"data\":{{\"op\":\"publish\",\"topic\":\"t\",\"data\":{i}}}}}\n")))).Dispose();

        // Five published with no poll outstanding against a limit of three: three messages (a response carries three),
        // the same three again for a poll that did not acknowledge them, then a gap standing for the two dropped.
        (await subscriber.PollAsync(0)).Dispose();
        (await subscriber.PollAsync(0)).Dispose();
        (await subscriber.PollAsync(3)).Dispose();
        var pending = await RawSession.OpenAsync(http, cluster.PubSub);
        (await subscriber.CloseAsync()).Dispose();

        var store = cluster.Nodes[0].Services.GetRequiredService<RedisDuplexConnection>().Stores.Single();
        await Eventually.That(
            () => measured["pollingduplex.sessions.ended"] == 2 && store.SessionCounts is { Pending: 0, Active: 1 },
            () => $"the closed session and the pending one that expired were counted, and the sweep reported one active: {measured}; {store.SessionCounts}");
        Assert.That(measured["pollingduplex.sessions.opened"], Is.EqualTo(3));
        Assert.That(measured["pollingduplex.messages.delivered"], Is.EqualTo(4), "three messages and a gap");
        Assert.That(measured["pollingduplex.messages.redelivered"], Is.EqualTo(3));
        Assert.That(measured["pollingduplex.messages.dropped"], Is.EqualTo(2));
        Assert.That(pending.Id, Is.Not.Empty);
    }

    private static async Task<DuplexCluster> StartAsync(int nodes, Action<PollingDuplexOptions> configure) =>
        await DuplexCluster.StartAsync(nodes, configure, await RedisServers.ConfigurationAsync(RedisKind.OneServer));
}
