using System.Net;
using System.Text.Json;
using ChannelPool.PollingDuplex.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// The pub/sub service on Redis, served by three nodes behind a round-robin balancer with no affinity: on one Redis,
/// and on a Redis Cluster of three masters, where a session's, a topic's and the endpoint's keys live on different shards.
/// </summary>
[TestFixture(RedisKind.OneServer)]
[TestFixture(RedisKind.Cluster)]
public class RedisScaleOutTests(RedisKind kind)
{
    [Test]
    public async Task ConsecutiveRequestsOfOneSession_LandOnDifferentNodes_AndStillWork()
    {
        await using var cluster = await StartAsync(o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(200));
        using var http = DuplexCluster.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, cluster.PubSub);
        using (var subscribed = await session.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n"))
        {
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK), await subscribed.Content.ReadAsStringAsync());
        }

        for (var i = 0; i < 5; i++)
        {
            using var poll = await session.PollAsync(0);
            Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        var nodes = cluster.Served.Where(s => s.SessionId == session.Id).Select(s => s.Node).ToList();
        Assert.That(nodes, Has.Count.EqualTo(6));
        Assert.That(nodes.Distinct().Count(), Is.EqualTo(3), "every node served the session");
        Assert.That(nodes.Zip(nodes.Skip(1)), Has.All.Matches<(int A, int B)>(p => p.A != p.B), "no two consecutive requests on the same node");
    }

    [Test]
    public async Task PublishThroughOneNode_WakesAPollHeldOnAnother_AtOnce()
    {
        await using var cluster = await StartAsync(o => o.ServerPollTimeout = TimeSpan.FromMinutes(1));
        using var http = DuplexCluster.CreateHttpClient();
        var subscriber = await RawSession.OpenAsync(http, cluster.Nodes[0].PubSub);
        using (await subscriber.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"news\"}}\n"))
        {
        }

        var onNode1 = subscriber.At(cluster.Nodes[1].PubSub);
        var held = onNode1.PollAsync(0);
        await Task.Delay(200);
        Assert.That(held.IsCompleted, Is.False, "the poll is held: nothing has been published");

        var publisher = await RawSession.OpenAsync(http, cluster.Nodes[2].PubSub);
        using (var published = await publisher.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"news\",\"data\":42}}\n"))
        {
            Assert.That(published.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        // Well inside the minute-long poll timeout: the wake came through Redis, not the timeout.
        using var response = await held.WaitAsync(TimeSpan.FromSeconds(10));
        Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        Assert.That(await response.Content.ReadAsStringAsync(), Is.EqualTo("{\"seq\":1,\"type\":\"message\",\"data\":{\"topic\":\"news\",\"data\":42}}\n"));
    }

    [Test]
    public async Task APollHeldBeforeItsSessionSubscribes_GetsTheTopicsMessages_AtOnce()
    {
        await using var cluster = await StartAsync(o => o.ServerPollTimeout = TimeSpan.FromMinutes(1));
        using var http = DuplexCluster.CreateHttpClient();
        var subscriber = await RawSession.OpenAsync(http, cluster.Nodes[0].PubSub);
        var held = subscriber.At(cluster.Nodes[1].PubSub).PollAsync(0);
        await Task.Delay(200);
        using (var subscribed = await subscriber.At(cluster.Nodes[2].PubSub).SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"late\"}}\n"))
        {
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        await Task.Delay(200);
        var publisher = await RawSession.OpenAsync(http, cluster.Nodes[2].PubSub);
        (await publisher.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"late\",\"data\":5}}\n")).Dispose();

        // Well inside the minute-long poll timeout: the held poll learned of its new topic, and waits on it.
        using var response = await held.WaitAsync(TimeSpan.FromSeconds(10));
        Assert.That(await response.Content.ReadAsStringAsync(), Is.EqualTo("{\"seq\":1,\"type\":\"message\",\"data\":{\"topic\":\"late\",\"data\":5}}\n"));
    }

    [Test]
    public async Task SubscribesThatRaceTheirSessionsFirstPoll_AndAPublishThatRacesTheFeedsFirstRead_WakeEveryPollAtOnce()
    {
        // The .NET client polls from the moment it opens, so its first subscribe races the first poll's start on the
        // node holding it; then the topic's first publish races that node's first read of the topic's log.
        const int Sessions = 64;
        await using var cluster = await StartAsync(o => o.ServerPollTimeout = TimeSpan.FromMinutes(1));
        using var http = DuplexCluster.CreateHttpClient();
        var sessions = await Task.WhenAll(Enumerable.Range(0, Sessions).Select(_ => RawSession.OpenAsync(http, cluster.Nodes[0].PubSub)));
        var held = new Task<HttpResponseMessage>[Sessions];
        await Task.WhenAll(sessions.Select(async (session, i) =>
        {
            // A subscribe is three scripts and a poll's start two, so the poll starts a little later, by a few ms more
            // for each session, for some subscribe to land inside some poll's start.
            var subscribing = session.At(cluster.Nodes[2].PubSub).SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"race\"}}\n");
            await Task.Delay(i % 16);
            held[i] = session.At(cluster.Nodes[1].PubSub).PollAsync(0);
            using var subscribed = await subscribing;
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }));

        var publisher = await RawSession.OpenAsync(http, cluster.Nodes[2].PubSub);
        (await publisher.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"race\",\"data\":7}}\n")).Dispose();

        // Well inside the minute-long poll timeout: no poll waited it out for a wake it missed.
        var responses = await Task.WhenAll(held).WaitAsync(TimeSpan.FromSeconds(15));
        foreach (var response in responses)
        {
            using (response)
            {
                Assert.That(await response.Content.ReadAsStringAsync(), Is.EqualTo("{\"seq\":1,\"type\":\"message\",\"data\":{\"topic\":\"race\",\"data\":7}}\n"));
            }
        }
    }

    [Test]
    public async Task ManySessionsOverThreeNodes_WithCutAndLostResponsesAndClientRestarts_GetEveryMessageOnceInOrder()
    {
        const int Subscribers = 24;
        const int Messages = 400;
        await using var cluster = await StartAsync(o =>
        {
            o.MaxPendingMessagesPerSession = Messages + 10;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(500);
            o.BatchWindow = TimeSpan.FromMilliseconds(2);
        });
        FaultInjectingHandler? faults = null;
        using var faulty = DuplexCluster.CreateHttpClient(inner => faults = new FaultInjectingHandler(inner, seed: 16)
        {
            DropRequestRate = 0.03,
            LoseResponseRate = 0.05,
            CutResponseRate = 0.1,
        });
        using var http = DuplexCluster.CreateHttpClient();
        var options = new PollingDuplexClientOptions { MaxRetryAttempts = 50, RetryBaseDelay = TimeSpan.FromMilliseconds(1), RetryMaxDelay = TimeSpan.FromMilliseconds(20) };
        var client = new PollingDuplexClient(faulty, cluster.PubSub, options);
        var subscribers = await Task.WhenAll(Enumerable.Range(0, Subscribers).Select(async i =>
        {
            var session = await OpenDespiteFaultsAsync(client);
            await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "feed" }));
            return session;
        })).Within();

        var restarting = await Task.WhenAll(Enumerable.Range(0, 6).Select(i => RestartingSubscriber.OpenAsync(http, cluster.PubSub, "feed", seed: 1000 * i))).Within();
        var reading = subscribers.Select(s => DeliveryTests.ReadAsync(s, Messages, TimeSpan.FromMinutes(1))).ToList();
        var restartingReads = restarting.Select(r => r.ReadAsync(Messages, restartEvery: 4, TimeSpan.FromMinutes(1))).ToList();
        await using (var publisher = await new PollingDuplexClient(http, cluster.PubSub, options).OpenSessionAsync())
        {
            // Ten at a time, a little apart, so the subscribers' polls come back often, and the faults have many
            // responses to cut: a response carries everything ready, so a publisher at full speed leaves few.
            for (var i = 1; i <= Messages; i += 10)
            {
                await publisher.SendAsync([.. Enumerable.Range(i, 10).Select(n => DuplexMessage.FromJson(new { op = "publish", topic = "feed", data = n }))]);
                await Task.Delay(10);
            }
        }

        var received = await Task.WhenAll(reading);
        await Task.WhenAll(restartingReads);
        Assert.That(received.Select(r => r.Select(d => Data(d.Message!))), Has.All.EqualTo(Enumerable.Range(1, Messages)), "each message once, in order, on every session");
        Assert.That(restarting.Select(r => r.Received), Has.All.EqualTo(Enumerable.Range(1, Messages)), "and on the clients that restarted");
        Assert.That(restarting.Select(r => r.Restarts), Has.All.GreaterThan(3));
        Assert.That(faults!.CutResponses + faults.LostResponses + faults.DroppedRequests, Is.GreaterThan(20), "the faults happened");
        Assert.That(cluster.Served.Select(s => s.Node).Distinct().Count(), Is.EqualTo(3));
        await Task.WhenAll(subscribers.Select(s => s.DisposeAsync().AsTask())).Within();
    }

    [TestCase(PollingDuplexMode.SingleMessagePerPoll, DuplexEncoding.Text)]
    [TestCase(PollingDuplexMode.MultipleMessagesPerPoll, DuplexEncoding.Text)]
    [TestCase(PollingDuplexMode.SingleMessagePerPoll, DuplexEncoding.Binary)]
    public async Task EveryModeAndEncoding_ThroughTheBalancer_WithCutResponses_DeliversEachMessageOnceInOrder(PollingDuplexMode mode, DuplexEncoding encoding)
    {
        const int Messages = 60;
        await using var cluster = await StartAsync(o =>
        {
            o.MaxPendingMessagesPerSession = Messages + 10;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(500);
        });
        using var faulty = DuplexCluster.CreateHttpClient(inner => new FaultInjectingHandler(inner, seed: 7) { LoseResponseRate = 0.05, CutResponseRate = 0.1 });
        using var http = DuplexCluster.CreateHttpClient();
        var options = new PollingDuplexClientOptions { Mode = mode, Encoding = encoding, MaxRetryAttempts = 50, RetryBaseDelay = TimeSpan.FromMilliseconds(1), RetryMaxDelay = TimeSpan.FromMilliseconds(20) };
        var subscribers = await Task.WhenAll(Enumerable.Range(0, 4).Select(async _ =>
        {
            var session = await OpenDespiteFaultsAsync(new PollingDuplexClient(faulty, cluster.PubSub, options));
            await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "feed" }));
            return session;
        })).Within();
        var reading = subscribers.Select(s => DeliveryTests.ReadAsync(s, Messages, TimeSpan.FromMinutes(1))).ToList();
        await using (var publisher = await new PollingDuplexClient(http, cluster.PubSub, options).OpenSessionAsync())
        {
            for (var i = 1; i <= Messages; i += 5)
            {
                await publisher.SendAsync([.. Enumerable.Range(i, 5).Select(n => DuplexMessage.FromJson(new { op = "publish", topic = "feed", data = n }))]);
            }
        }

        var received = await Task.WhenAll(reading);
        Assert.That(received.Select(r => r.Select(d => Data(d.Message!))), Has.All.EqualTo(Enumerable.Range(1, Messages)));
        await Task.WhenAll(subscribers.Select(s => s.DisposeAsync().AsTask())).Within();
    }

    [Test]
    public async Task ANodeKilledMidRun_LosesNothing_ClientsCarryOnThroughTheOthers()
    {
        const int Subscribers = 12;
        const int Messages = 200;
        await using var cluster = await StartAsync(o =>
        {
            o.MaxPendingMessagesPerSession = Messages + 10;
            o.ServerPollTimeout = TimeSpan.FromSeconds(2);
        });
        using var http = DuplexCluster.CreateHttpClient();
        var options = new PollingDuplexClientOptions { MaxRetryAttempts = 50, RetryBaseDelay = TimeSpan.FromMilliseconds(1), RetryMaxDelay = TimeSpan.FromMilliseconds(20) };
        var client = new PollingDuplexClient(http, cluster.PubSub, options);
        var subscribers = await Task.WhenAll(Enumerable.Range(0, Subscribers).Select(async _ =>
        {
            var session = await client.OpenSessionAsync();
            await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "feed" }));
            return session;
        })).Within();
        var reading = subscribers.Select(s => DeliveryTests.ReadAsync(s, Messages, TimeSpan.FromMinutes(1))).ToList();

        await using (var publisher = await client.OpenSessionAsync())
        {
            for (var i = 1; i <= Messages; i += 10)
            {
                if (i == Messages / 2 + 1)
                {
                    await cluster.Nodes[1].KillAsync();
                }

                await publisher.SendAsync([.. Enumerable.Range(i, 10).Select(n => DuplexMessage.FromJson(new { op = "publish", topic = "feed", data = n }))]);
            }
        }

        var received = await Task.WhenAll(reading);
        Assert.That(received.Select(r => r.Select(d => Data(d.Message!))), Has.All.EqualTo(Enumerable.Range(1, Messages)));
        Assert.That(cluster.Nodes[1].Killed, Is.True);
        await Task.WhenAll(subscribers.Select(s => s.DisposeAsync().AsTask())).Within();
    }

    internal static int Data(DuplexMessage message)
    {
        using var json = JsonDocument.Parse(message.Payload);
        return json.RootElement.GetProperty("data").GetInt32();
    }

    internal static async Task<DuplexClientSession> OpenDespiteFaultsAsync(PollingDuplexClient client)
    {
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                return await client.OpenSessionAsync();
            }
            catch (HttpRequestException) when (attempt < 20)
            {
            }
        }
    }

    private async Task<DuplexCluster> StartAsync(Action<PollingDuplexOptions> configure) =>
        await DuplexCluster.StartAsync(configure: configure, redis: await RedisServers.ConfigurationAsync(kind));
}
