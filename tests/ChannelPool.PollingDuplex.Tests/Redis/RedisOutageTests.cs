using System.Net;
using System.Text.Json;
using ChannelPool.PollingDuplex.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>Redis going away and coming back: the nodes answer 503 meanwhile, and nothing is lost.</summary>
public class RedisOutageTests
{
    [Test]
    public async Task RedisStoppedAndRestarted_RequestsFailWithAClear503_ThenDeliveryResumes()
    {
        await using var redis = await RedisServerProcess.StartAsync(persistent: true);
        await using var cluster = await DuplexCluster.StartAsync(configure: o => o.ServerPollTimeout = TimeSpan.FromSeconds(6), redis: redis.Configuration);
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
        Assert.That(received.Select(d => RedisScaleOutTests.Data(d.Message!)), Is.EqualTo(Enumerable.Range(1, 20)));

        // Held polls wake through Redis again, well before their poll timeout: the wake channel came back too.
        await AssertAPublishWakesAHeldPollAsync(http, [.. cluster.Nodes.Select(n => n.PubSub)], TimeSpan.FromSeconds(4), "woken by the publish, not by the 6-second poll timeout");
    }

    [Test]
    public async Task ANodeStartedWhileRedisIsDown_Answers503_ThenServesOnceRedisIsUp()
    {
        await using var redis = await RedisServerProcess.StartAsync();
        await redis.KillAsync();
        await using var cluster = await DuplexCluster.StartAsync(nodes: 1, configure: o => o.ServerPollTimeout = TimeSpan.FromSeconds(10), redis: redis.Configuration);
        using var http = DuplexCluster.CreateHttpClient();
        using (var refused = await http.PostAsync(new Uri(cluster.PubSub + "/sessions"), RawSession.JsonContent("{}")))
        {
            await RawSession.AssertProblemAsync(refused, HttpStatusCode.ServiceUnavailable, "store-unavailable");
        }

        await redis.StartAgainAsync();
        _ = await OpenOnceRedisIsBackAsync(http, cluster.PubSub);
        await AssertAPublishWakesAHeldPollAsync(http, [cluster.PubSub], TimeSpan.FromSeconds(7), "the wake subscription made while Redis was down was sent once it came up");
    }

    [Test]
    public async Task AShardOfTheRedisCluster_KilledAndStartedAgain_LosesNothing_AndTheOtherShardsServeMeanwhile()
    {
        const int Messages = 100;
        await using var redis = await RedisClusterProcess.StartAsync(persistent: true);
        await using var cluster = await DuplexCluster.StartAsync(
            configure: o =>
            {
                o.ServerPollTimeout = TimeSpan.FromSeconds(2);
                o.MaxPendingMessagesPerSession = Messages + 10;
            },
            redis: redis.Configuration);
        Unavailable? unavailable = null;
        using var http = DuplexCluster.CreateHttpClient(inner => unavailable = new Unavailable(inner));
        var options = new PollingDuplexClientOptions { MaxRetryAttempts = 100, RetryBaseDelay = TimeSpan.FromMilliseconds(50), RetryMaxDelay = TimeSpan.FromMilliseconds(300) };
        var client = new PollingDuplexClient(http, cluster.PubSub, options);
        var subscribers = await Task.WhenAll(Enumerable.Range(0, 6).Select(async i =>
        {
            var session = await client.OpenSessionAsync();
            await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = $"feed-{i % 3}" }));
            return (Session: session, Topic: i % 3);
        })).Within();
        var reading = subscribers.Select(s => DeliveryTests.ReadAsync(s.Session, Messages, TimeSpan.FromMinutes(2))).ToList();
        await using var publisher = await client.OpenSessionAsync();
        var restarted = Task.CompletedTask;
        for (var i = 1; i <= Messages; i++)
        {
            if (i == (Messages / 2) + 1)
            {
                await redis.Shards[1].KillAsync();
                restarted = StartAgainOnceRefusedAsync(redis.Shards[1], unavailable!);
            }

            // One message to each of the three topics, spread over the shards by their names.
            await publisher.SendAsync([.. Enumerable.Range(0, 3).Select(t => DuplexMessage.FromJson(new { op = "publish", topic = $"feed-{t}", data = i }))]);
        }

        var received = await Task.WhenAll(reading);
        await restarted.Within();
        Assert.That(received.Select(r => r.Select(d => RedisScaleOutTests.Data(d.Message!))), Has.All.EqualTo(Enumerable.Range(1, Messages)));
        Assert.That(unavailable!.Count, Is.GreaterThan(0), "requests that reached the stopped shard were answered 503, and retried");
        await redis.WaitUntilServedAsync();
        await Task.WhenAll(subscribers.Select(s => s.Session.DisposeAsync().AsTask())).Within();
    }

    /// <summary>
    /// A session subscribes on the first node, holds a poll on the next, and another session publishes on the next again:
    /// the poll answers with the message sooner than <paramref name="within"/>, so a wake came through Redis.
    /// </summary>
    private static async Task AssertAPublishWakesAHeldPollAsync(HttpClient http, Uri[] nodes, TimeSpan within, string why)
    {
        var listener = await RawSession.OpenAsync(http, nodes[0]);
        (await listener.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"after\"}}\n")).Dispose();
        var held = listener.At(nodes[1 % nodes.Length]).PollAsync(0);
        await Task.Delay(200);
        var talker = await RawSession.OpenAsync(http, nodes[2 % nodes.Length]);
        (await talker.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"after\",\"data\":1}}\n")).Dispose();
        var started = System.Diagnostics.Stopwatch.StartNew();
        using var woken = await held.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.That(woken.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        Assert.That(started.Elapsed, Is.LessThan(within), why);
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

    /// <summary>Counts the 503 answers a client got.</summary>
    /// <summary>
    /// Starts the killed shard again once three requests have been refused for it (a request and its retries), so the
    /// outage is seen whatever the machine's speed, and lasts no longer than that (at most 30 s, after which the test's
    /// own assertion fails).
    /// </summary>
    private static async Task StartAgainOnceRefusedAsync(RedisServerProcess shard, Unavailable unavailable)
    {
        var waited = System.Diagnostics.Stopwatch.StartNew();
        while (unavailable.Count < 3 && waited.Elapsed < TimeSpan.FromSeconds(30))
        {
            await Task.Delay(20);
        }

        await shard.StartAgainAsync();
    }

    private sealed class Unavailable(HttpMessageHandler inner) : DelegatingHandler(inner)
    {
        private int _count;

        public int Count => Volatile.Read(ref _count);

        protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            var response = await base.SendAsync(request, cancellationToken);
            if (response.StatusCode == HttpStatusCode.ServiceUnavailable)
            {
                Interlocked.Increment(ref _count);
            }

            return response;
        }
    }
}
