using System.Security.Claims;
using System.Text.Json;
using ChannelPool.PollingDuplex.Client;
using ChannelPool.PollingDuplex.PubSub;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// Pushing from the server side on Redis, from any node: a publish to a topic, a send to a user's sessions, and the
/// subscriber count, all cluster-wide. Node A publishes; clients reach only nodes B and C, through the balancer.
/// </summary>
[TestFixture(RedisKind.OneServer)]
[TestFixture(RedisKind.Cluster)]
public class RedisServerPushTests(RedisKind kind)
{
    private const string UserHeader = "X-Test-User";

    [Test]
    public async Task ABackgroundServiceOnNodeA_Publishes_ClientsPollingThroughNodesBAndC_ReceiveEachOnceInOrder()
    {
        const int Messages = 200;
        var ready = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var cluster = await StartAsync((index, builder) =>
        {
            if (index == 0)
            {
                builder.Services.AddHostedService(s => new TopicPublisher(s.GetRequiredService<IPubSubPublisher>(), ready.Task, Messages));
            }
        });
        using var http = DuplexCluster.CreateHttpClient(inner => new FaultInjectingHandler(inner, seed: 24) { CutResponseRate = 0.1, LoseResponseRate = 0.05 });
        var client = new PollingDuplexClient(http, cluster.PubSub, new PollingDuplexClientOptions { MaxRetryAttempts = 50, RetryBaseDelay = TimeSpan.FromMilliseconds(1), RetryMaxDelay = TimeSpan.FromMilliseconds(20) });
        var subscribers = await Task.WhenAll(Enumerable.Range(0, 6).Select(async _ =>
        {
            var session = await RedisScaleOutTests.OpenDespiteFaultsAsync(client);
            await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "feed" }));
            return session;
        })).Within();
        var reading = subscribers.Select(s => DeliveryTests.ReadAsync(s, Messages, TimeSpan.FromMinutes(1))).ToList();
        ready.SetResult();

        var received = await Task.WhenAll(reading);
        Assert.That(received.Select(r => r.Select(d => RedisScaleOutTests.Data(d.Message!))), Has.All.EqualTo(Enumerable.Range(1, Messages)));
        Assert.That(cluster.Served.Select(s => s.Node).Distinct().Order(), Is.EqualTo(new[] { 1, 2 }), "the clients reached nodes B and C only");
        await Task.WhenAll(subscribers.Select(s => s.DisposeAsync().AsTask())).Within();
    }

    [Test]
    public async Task ASendToAUser_FromNodeA_ReachesEachOfThatUsersSessionsOnceInOrder_AndNoOneElses()
    {
        await using var cluster = await StartAsync(map: (_, app) => app.Use((context, next) =>
        {
            if (context.Request.Headers[UserHeader] is [{ Length: > 0 } user])
            {
                context.User = new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.NameIdentifier, user)], "test"));
            }

            return next(context);
        }));
        using var alice = UserClient("alice");
        using var bob = UserClient("bob");
        var options = new PollingDuplexClientOptions { MaxRetryAttempts = 20, RetryBaseDelay = TimeSpan.FromMilliseconds(1) };
        var alices = await Task.WhenAll(Enumerable.Range(0, 2).Select(_ => new PollingDuplexClient(alice, cluster.PubSub, options).OpenSessionAsync())).Within();
        await using var bobs = await new PollingDuplexClient(bob, cluster.PubSub, options).OpenSessionAsync().Within();
        var reading = alices.Select(s => DeliveryTests.ReadAsync(s, 50, TimeSpan.FromMinutes(1))).ToList();

        var publisher = cluster.Nodes[0].Services.GetRequiredService<IPubSubPublisher>();
        for (var i = 1; i <= 50; i++)
        {
            await publisher.SendToUserAsync("alice", DuplexMessage.FromJson(new { user = "alice", data = i }));
        }

        var received = await Task.WhenAll(reading);
        Assert.That(received.Select(r => r.Select(d => JsonDocument.Parse(d.Message!.Payload).RootElement.GetProperty("data").GetInt32())), Has.All.EqualTo(Enumerable.Range(1, 50)));
        using (var quiet = new CancellationTokenSource(TimeSpan.FromMilliseconds(500)))
        {
            Assert.That(async () => await bobs.ReceiveAsync(quiet.Token), Throws.InstanceOf<OperationCanceledException>(), "bob's session got none of alice's messages");
        }
        await Task.WhenAll(alices.Select(s => s.DisposeAsync().AsTask())).Within();
    }

    [Test]
    public async Task TheSubscriberCount_FromAnyNode_CountsEveryNodesSubscribers()
    {
        await using var cluster = await StartAsync();
        using var http = DuplexCluster.CreateHttpClient();
        var client = new PollingDuplexClient(http, cluster.PubSub);
        var sessions = await Task.WhenAll(Enumerable.Range(0, 5).Select(async _ =>
        {
            var session = await client.OpenSessionAsync();
            await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "news" }));
            return session;
        })).Within();
        var onA = cluster.Nodes[0].Services.GetRequiredService<IPubSubPublisher>();
        Assert.That(await onA.CountSubscribersAsync("news"), Is.EqualTo(5));
        Assert.That(await onA.CountSubscribersAsync("nobody-reads-this"), Is.Zero);

        await sessions[0].SendAsync(DuplexMessage.FromJson(new { op = "unsubscribe", topic = "news" }));
        await sessions[1].CloseAsync();
        await Eventually.That(() => onA.CountSubscribersAsync("news").AsTask().Result == 3, "an unsubscribe and a close count at once");
        await Task.WhenAll(sessions.Skip(1).Select(s => s.DisposeAsync().AsTask())).Within();
    }

    private static HttpClient UserClient(string user)
    {
        var http = DuplexCluster.CreateHttpClient();
        http.DefaultRequestHeaders.Add(UserHeader, user);
        return http;
    }

    /// <summary>Three nodes on the Redis, each with the application's publisher (<c>AddPollingDuplexPubSub</c>); the balancer reaches B and C only.</summary>
    private async Task<DuplexCluster> StartAsync(Action<int, WebApplicationBuilder>? configure = null, Action<int, WebApplication>? map = null) =>
        await DuplexCluster.StartAsync(new DuplexClusterOptions
        {
            Nodes = 3,
            Redis = await RedisServers.ConfigurationAsync(kind),
            BalancedNodes = [1, 2],
            TrackRequests = true,
            Configure = o =>
            {
                o.ServerPollTimeout = TimeSpan.FromSeconds(2);
                o.MaxPendingMessagesPerSession = 256;
            },
            ConfigureNode = (index, builder) =>
            {
                builder.Services.AddPollingDuplexPubSub();
                configure?.Invoke(index, builder);
            },
            MapNode = map,
        });

    /// <summary>Publishes 1..count to "feed" once the subscribers are ready: the application's background work on node A.</summary>
    private sealed class TopicPublisher(IPubSubPublisher publisher, Task ready, int count) : BackgroundService
    {
        protected override async Task ExecuteAsync(CancellationToken stoppingToken)
        {
            await ready.WaitAsync(stoppingToken);
            for (var i = 1; i <= count; i++)
            {
                await publisher.PublishAsync("feed", DuplexMessage.FromJson(i), stoppingToken);
            }
        }
    }
}
