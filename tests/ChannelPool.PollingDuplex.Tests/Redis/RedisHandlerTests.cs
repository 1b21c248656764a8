using System.Collections.Concurrent;
using System.Net;
using ChannelPool.PollingDuplex.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// An application's own handler (<see cref="AsyncPollingDuplexHandler"/>) on many nodes: each message handled once
/// across the cluster, its sends reaching the session whichever node holds the poll, and the same handler on one node
/// in memory, where a send completes at once.
/// </summary>
[TestFixture(RedisKind.OneServer)]
[TestFixture(RedisKind.Cluster)]
public class RedisHandlerTests(RedisKind kind)
{
    [Test]
    public async Task ACustomHandlerOnThreeNodes_HandlesEachMessageOnce_AndItsRepliesReachThePollWhereverItIsHeld()
    {
        const int Messages = 60;
        var log = new HandlerLog();
        await using var cluster = await StartAsync(log);
        using var faulty = DuplexCluster.CreateHttpClient(inner => new FaultInjectingHandler(inner, seed: 27) { CutResponseRate = 0.1, LoseResponseRate = 0.05 });
        var client = new PollingDuplexClient(faulty, cluster.At("duplex"), new PollingDuplexClientOptions { MaxRetryAttempts = 50, RetryBaseDelay = TimeSpan.FromMilliseconds(1), RetryMaxDelay = TimeSpan.FromMilliseconds(20) });
        await using var session = await RedisScaleOutTests.OpenDespiteFaultsAsync(client);
        var replies = DeliveryTests.ReadAsync(session, Messages, TimeSpan.FromMinutes(1));
        for (var i = 1; i <= Messages; i += 5)
        {
            await session.SendAsync([.. Enumerable.Range(i, 5).Select(n => DuplexMessage.FromJson(n))]).AsTask().Within();
        }

        Assert.That((await replies).Select(d => d.Message!.Deserialize<int>()), Is.EqualTo(Enumerable.Range(1, Messages)), "every reply once, in order");
        Assert.That(log.Handled[session.Id], Is.EqualTo(Enumerable.Range(1, Messages)), "every message handled once, in order, across the nodes");
        Assert.That(log.Opened, Does.Contain(session.Id));
        Assert.That(cluster.Served.Where(s => s.SessionId == session.Id).Select(s => s.Node).Distinct().Count(), Is.EqualTo(3));
    }

    [Test]
    public async Task TheHandlersSendAsync_OnOneNode_ReachesASessionPolledThroughTheOthers_AndAnEndIsReported()
    {
        var log = new HandlerLog();
        await using var cluster = await StartAsync(log);
        using var http = DuplexCluster.CreateHttpClient();
        var session = await new PollingDuplexClient(http, cluster.At("duplex"), new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text }).OpenSessionAsync().Within();
        var reading = DeliveryTests.ReadAsync(session, 20, TimeSpan.FromMinutes(1));
        var onNodeA = cluster.Nodes[0].Services.GetRequiredService<EchoHandler>();
        for (var i = 1; i <= 20; i++)
        {
            Assert.That(await onNodeA.SendAsync(session.Id, DuplexMessage.FromJson(i)), Is.EqualTo(DuplexSendResult.Queued));
        }

        Assert.That((await reading).Select(d => d.Message!.Deserialize<int>()), Is.EqualTo(Enumerable.Range(1, 20)));
        Assert.That(await onNodeA.SendAsync("NoSuchSessionAAAAAAAAA", DuplexMessage.FromJson(1)), Is.EqualTo(DuplexSendResult.SessionEnded));
        Assert.That(async () => await onNodeA.SendAsync(session.Id, DuplexMessage.FromBytes(new byte[] { 1 })), Throws.ArgumentException.With.Message.Contains("text encoding"));

        await session.CloseAsync();
        await Eventually.That(() => log.Ended.TryGetValue(session.Id, out var reason) && reason == DuplexSessionEndReason.ClosedByClient, "the handler heard that the client closed it");
        Assert.That(await onNodeA.SendAsync(session.Id, DuplexMessage.FromJson(21)), Is.EqualTo(DuplexSendResult.SessionEnded));
    }

    [Test]
    public async Task AMessageTheHandlerFailsOn_IsNotReceived_AndItsRetryIsHandled()
    {
        var log = new HandlerLog { FailFirst = 3 };
        await using var cluster = await StartAsync(log);
        using var http = DuplexCluster.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, cluster.At("duplex"));
        using (var ok = await session.SendTextAsync("{\"seq\":1,\"data\":1}\n{\"seq\":2,\"data\":2}\n"))
        {
            Assert.That(ok.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        using (var failed = await session.SendTextAsync("{\"seq\":3,\"data\":3}\n"))
        {
            await RawSession.AssertProblemAsync(failed, HttpStatusCode.InternalServerError, "handler-failed");
        }

        using (var retried = await session.SendTextAsync("{\"seq\":3,\"data\":3}\n"))
        {
            Assert.That(retried.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        using (var rejected = await session.SendTextAsync("{\"seq\":4,\"data\":-1}\n"))
        {
            await RawSession.AssertProblemAsync(rejected, HttpStatusCode.UnprocessableEntity, "message-rejected");
        }

        Assert.That(log.Handled[session.Id], Is.EqualTo(new[] { 1, 2, 3 }), "3 once it succeeded; -1 refused");
        Assert.That(log.Attempts, Is.EqualTo(5));
    }

    [Test]
    public async Task InMemory_TheSameHandlersSends_CompleteAtOnce()
    {
        var log = new HandlerLog();
        await using var cluster = await DuplexCluster.StartAsync(new DuplexClusterOptions
        {
            ConfigureNode = (_, builder) => builder.Services.AddSingleton(log).AddSingleton<EchoHandler>(),
            MapNode = (_, app) => app.MapPollingDuplex<EchoHandler>("/duplex"),
        });
        using var http = DuplexCluster.CreateHttpClient();
        await using var session = await new PollingDuplexClient(http, cluster.At("duplex")).OpenSessionAsync().Within();
        var handler = cluster.Nodes[0].Services.GetRequiredService<EchoHandler>();
        var sending = handler.SendAsync(session.Id, DuplexMessage.FromJson(7));
        Assert.That(sending.IsCompletedSuccessfully, Is.True, "the in-memory store's synchronous path");
        Assert.That(await sending, Is.EqualTo(DuplexSendResult.Queued));
        await session.SendAsync(DuplexMessage.FromJson(8)).AsTask().Within();
        Assert.That((await DeliveryTests.ReadAsync(session, 2)).Select(d => d.Message!.Deserialize<int>()), Is.EqualTo(new[] { 7, 8 }));
    }

    private async Task<DuplexCluster> StartAsync(HandlerLog log) => await DuplexCluster.StartAsync(new DuplexClusterOptions
    {
        Nodes = 3,
        Redis = await RedisServers.ConfigurationAsync(kind),
        TrackRequests = true,
        Configure = o => o.ServerPollTimeout = TimeSpan.FromSeconds(2),
        ConfigureNode = (_, builder) => builder.Services.AddSingleton(log).AddSingleton<EchoHandler>(),
        MapNode = (_, app) => app.MapPollingDuplexOnRedis<EchoHandler>("/duplex", o => o.ServerPollTimeout = TimeSpan.FromSeconds(2)),
    });

    /// <summary>What every node's handler did, shared by the nodes of one test.</summary>
    private sealed class HandlerLog
    {
        private readonly ConcurrentDictionary<int, byte> _failed = new();
        private int _attempts;

        public ConcurrentQueue<string> Opened { get; } = new();

        public ConcurrentDictionary<string, ConcurrentQueue<int>> Handled { get; } = new();

        public ConcurrentDictionary<string, DuplexSessionEndReason> Ended { get; } = new();

        /// <summary>Gets or sets a value the handler fails on, the first time it sees it.</summary>
        public int FailFirst { get; init; }

        public int Attempts => _attempts;

        /// <summary>Counts an attempt to handle <paramref name="value"/>; returns whether the handler should fail it.</summary>
        public bool Attempt(int value)
        {
            Interlocked.Increment(ref _attempts);
            return value == FailFirst && _failed.TryAdd(value, 0);
        }
    }

    /// <summary>Sends every message back to its session, through the store; refuses -1.</summary>
    private sealed class EchoHandler(HandlerLog log) : AsyncPollingDuplexHandler
    {
        public override ValueTask OnSessionOpenedAsync(DuplexSessionHandle session, CancellationToken cancellationToken)
        {
            log.Opened.Enqueue(session.Id);
            return ValueTask.CompletedTask;
        }

        public override async ValueTask OnMessageAsync(DuplexSessionHandle session, DuplexMessage message, CancellationToken cancellationToken)
        {
            var value = message.Deserialize<int>();
            if (log.Attempt(value))
            {
                throw new InvalidOperationException($"failing on {value} once");
            }

            if (value < 0)
            {
                throw new DuplexMessageRejectedException("negative");
            }

            log.Handled.GetOrAdd(session.Id, _ => new()).Enqueue(value);
            Assert.That(await session.SendAsync(message, cancellationToken), Is.EqualTo(DuplexSendResult.Queued));
        }

        public override ValueTask OnSessionEndedAsync(DuplexSessionHandle session, DuplexSessionEndReason reason)
        {
            log.Ended[session.Id] = reason;
            return ValueTask.CompletedTask;
        }
    }
}
