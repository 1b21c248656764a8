using System.Net;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>What the endpoint code records, it records for the Redis store too: the same instruments, the same tags.</summary>
public class RedisTelemetryTests
{
    [Test]
    public async Task RedisEndpoints_CountPollsByOutcome_AndReceivedMessages_TaggedWithTheEndpoint()
    {
        using var measured = new EndpointMetrics("/pubsub");

        await using var cluster = await DuplexCluster.StartAsync(configure: o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(200));
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
}
