using System.Net;
using System.Text.Json;
using ChannelPool.PollingDuplex.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>The pub/sub service on Redis, served by three nodes behind a round-robin balancer with no affinity.</summary>
public class RedisClusterTests
{
    [Test]
    public async Task ConsecutiveRequestsOfOneSession_LandOnDifferentNodes_AndStillWork()
    {
        await using var cluster = await DuplexCluster.StartAsync(configure: o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(200));
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
        await using var cluster = await DuplexCluster.StartAsync(configure: o => o.ServerPollTimeout = TimeSpan.FromMinutes(1));
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
    public async Task ManySessionsOverThreeNodes_WithCutAndLostResponsesAndClientRestarts_GetEveryMessageOnceInOrder()
    {
        const int Subscribers = 24;
        const int Messages = 400;
        await using var cluster = await DuplexCluster.StartAsync(configure: o =>
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
            for (var i = 1; i <= Messages; i += 20)
            {
                await publisher.SendAsync([.. Enumerable.Range(i, 20).Select(n => DuplexMessage.FromJson(new { op = "publish", topic = "feed", data = n }))]);
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
        await using var cluster = await DuplexCluster.StartAsync(configure: o =>
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
        await using var cluster = await DuplexCluster.StartAsync(configure: o =>
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

    [Test]
    public async Task RedisStoppedAndRestarted_RequestsFailWithAClear503_ThenDeliveryResumes()
    {
        await using var redis = await RedisServerProcess.StartAsync(persistent: true);
        await using var cluster = await DuplexCluster.StartAsync(configure: o => o.ServerPollTimeout = TimeSpan.FromSeconds(6), redis: redis);
        using var http = DuplexCluster.CreateHttpClient();
        var options = new PollingDuplexClientOptions { MaxRetryAttempts = 100, RetryBaseDelay = TimeSpan.FromMilliseconds(50), RetryMaxDelay = TimeSpan.FromMilliseconds(200) };
        var client = new PollingDuplexClient(http, cluster.PubSub, options);
        await using var subscriber = await client.OpenSessionAsync();
        await subscriber.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "feed" }));
        var reading = DeliveryTests.ReadAsync(subscriber, 20, TimeSpan.FromMinutes(1));
        await using var publisher = await client.OpenSessionAsync();
        for (var i = 1; i <= 10; i++)
        {
            await publisher.SendAsync(DuplexMessage.FromJson(new { op = "publish", topic = "feed", data = i }));
        }

        var raw = await RawSession.OpenAsync(http, cluster.PubSub);
        await redis.KillAsync();
        using (var refused = await raw.PollAsync(0))
        {
            var problem = await RawSession.AssertProblemAsync(refused, HttpStatusCode.ServiceUnavailable, "store-unavailable");
            Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("Redis"));
            Assert.That(refused.Headers.RetryAfter, Is.Not.Null);
        }

        // The publisher keeps trying through the outage; its sends succeed once Redis is back.
        var publishing = Task.Run(async () =>
        {
            for (var i = 11; i <= 20; i++)
            {
                await publisher.SendAsync(DuplexMessage.FromJson(new { op = "publish", topic = "feed", data = i }));
            }
        });
        await Task.Delay(500);
        await redis.StartAgainAsync();
        await publishing.WaitAsync(TimeSpan.FromSeconds(30));

        var received = await reading;
        Assert.That(received.Select(d => Data(d.Message!)), Is.EqualTo(Enumerable.Range(1, 20)));

        // Held polls wake through Redis again, well before their poll timeout: the wake channel came back too.
        var listener = await RawSession.OpenAsync(http, cluster.Nodes[0].PubSub);
        (await listener.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"after\"}}\n")).Dispose();
        var held = listener.At(cluster.Nodes[1].PubSub).PollAsync(0);
        await Task.Delay(200);
        var talker = await RawSession.OpenAsync(http, cluster.Nodes[2].PubSub);
        (await talker.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"after\",\"data\":1}}\n")).Dispose();
        var started = System.Diagnostics.Stopwatch.StartNew();
        using var woken = await held.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.That(woken.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        Assert.That(started.Elapsed, Is.LessThan(TimeSpan.FromSeconds(4)), "woken by the publish, not by the 6-second poll timeout");
    }

    [Test]
    public async Task ANodeStartedWhileRedisIsDown_Answers503_ThenServesOnceRedisIsUp()
    {
        await using var redis = await RedisServerProcess.StartAsync();
        await redis.KillAsync();
        await using var cluster = await DuplexCluster.StartAsync(nodes: 1, configure: o => o.ServerPollTimeout = TimeSpan.FromSeconds(10), redis: redis);
        using var http = DuplexCluster.CreateHttpClient();
        using (var refused = await http.PostAsync(new Uri(cluster.PubSub + "/sessions"), RawSession.JsonContent("{}")))
        {
            await RawSession.AssertProblemAsync(refused, HttpStatusCode.ServiceUnavailable, "store-unavailable");
        }

        await redis.StartAgainAsync();
        var subscriber = await OpenOnceRedisIsBackAsync(http, cluster.PubSub);
        (await subscriber.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n")).Dispose();
        var held = subscriber.PollAsync(0);
        await Task.Delay(200);
        var publisher = await RawSession.OpenAsync(http, cluster.PubSub);
        (await publisher.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"t\",\"data\":7}}\n")).Dispose();
        var started = System.Diagnostics.Stopwatch.StartNew();
        using var woken = await held.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.That(woken.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        Assert.That(started.Elapsed, Is.LessThan(TimeSpan.FromSeconds(7)), "the wake subscription made while Redis was down was sent once it came up");
    }

    [Test]
    public void MappingWithoutTheRedisStore_SaysWhatToCall()
    {
        var builder = WebApplication.CreateSlimBuilder();
        using var app = builder.Build();
        var error = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplexPubSubOnRedis("/pubsub", o => o.Topics.AllowAnonymous = true));
        Assert.That(error!.Message, Does.Contain("AddPollingDuplexRedis"));
    }

    [TestCase("", "Configuration is required")]
    [TestCase("127.0.0.1:1,nonsense=1", "is not a StackExchange.Redis configuration string")]
    public void BadRedisOptions_FailAtStart_NamingTheRule(string configuration, string expected)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Services.AddPollingDuplexRedis(o =>
        {
            o.Configuration = configuration;
            o.KeyPrefix = "{bad}";
            o.OperationTimeout = TimeSpan.Zero;
        });
        using var app = builder.Build();
        var error = Assert.Throws<OptionsValidationException>(() => app.MapPollingDuplexPubSubOnRedis("/pubsub", o => o.Topics.AllowAnonymous = true));
        Assert.That(error!.Message, Does.Contain(expected).And.Contain("KeyPrefix").And.Contain("OperationTimeout"));
    }

    /// <summary>Opens a session, retrying the 503s a node answers until its connection to Redis is back.</summary>
    private static async Task<RawSession> OpenOnceRedisIsBackAsync(HttpClient http, Uri endpoint)
    {
        var waited = System.Diagnostics.Stopwatch.StartNew();
        while (true)
        {
            using var response = await http.PostAsync(new Uri(endpoint + "/sessions"), RawSession.JsonContent("{}"));
            if (response.StatusCode == HttpStatusCode.Created)
            {
                using var json = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
                return RawSession.Attach(http, endpoint, json.RootElement.GetProperty("sessionId").GetString()!, json.RootElement.GetProperty("token").GetString()!);
            }

            Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.ServiceUnavailable));
            Assert.That(waited.Elapsed, Is.LessThan(Eventually.Limit), "the node did not reconnect to Redis");
            await Task.Delay(100);
        }
    }

    internal static int Data(DuplexMessage message)
    {
        using var json = JsonDocument.Parse(message.Payload);
        return json.RootElement.GetProperty("data").GetInt32();
    }

    private static async Task<DuplexClientSession> OpenDespiteFaultsAsync(PollingDuplexClient client)
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
}
