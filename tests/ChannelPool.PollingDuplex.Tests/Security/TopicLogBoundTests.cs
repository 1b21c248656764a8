using System.Globalization;
using System.Net;
using System.Text;
using System.Text.Json;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// What a topic holds for its subscribers, the same rule on both stores: what every subscriber has taken is freed, and a
/// subscriber more than <see cref="PollingDuplexOptions.MaxPendingBytesPerSession"/> behind meets its overflow policy,
/// on Redis even where its node's feed had the entries the log trimmed (docs/polling-duplex.md, "A publish burst" and
/// "What a signed-in user can make the server hold").
/// </summary>
[TestFixture(DuplexStore.InMemory)]
[TestFixture(DuplexStore.Redis)]
public class TopicLogBoundTests(DuplexStore store)
{
    [Test]
    public async Task WhatEverySubscriberHasTaken_IsFreed_SoAUsersTopicsHoldNoLogEntriesOnceRead()
    {
        // Renewals (which report what each subscriber took) come every InactivityTimeout / 4: 2 s here.
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromSeconds(1);
            o.InactivityTimeout = TimeSpan.FromSeconds(8);
        });
        using var alice = SecureDuplexServer.ClientFor("alice");
        var subscriber = await RawSession.OpenAsync(alice, server.Address);
        var publisher = await RawSession.OpenAsync(alice, server.Address);
        using (var subscribed = await subscriber.SendTextAsync(string.Concat(Enumerable.Range(1, 8).Select(t => TopicRuleTests.Command(t, "subscribe", $"t{t}")))))
        {
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        // Ten sends of one 4,000-byte publish to each of the 8 topics: 80 entries, 10 a topic (the log kept 64 a topic
        // before), each send read before the next.
        var payload = new string('x', 4000);
        var received = new List<long>();
        long ack = 0;
        for (var round = 0; round < 10; round++)
        {
            using var sent = await publisher.SendTextAsync(string.Concat(Enumerable.Range(1, 8).Select(t => TopicRuleTests.Command((round * 8) + t, "publish", $"t{t}", payload))));
            Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());
            while (received.Count < (round + 1) * 8)
            {
                ack = await PollAsync(subscriber, ack, received);
            }
        }

        Assert.That(received, Has.Count.EqualTo(80), "every publish once");
        using var redis = server.RedisConfiguration is { } configuration ? await ConnectionMultiplexer.ConnectAsync(configuration) : null;
        if (redis is null)
        {
            return;
        }

        // The subscriber keeps polling (acknowledging everything); its next renewal reports what it took, and the
        // logs let go of it. An eventual condition with a generous deadline, not a timing.
        var deadline = DateTime.UtcNow.AddSeconds(60);
        long held;
        while ((held = await CountLogEntriesAsync(redis)) > 0 && DateTime.UtcNow < deadline)
        {
            ack = await PollAsync(subscriber, ack, received);
        }

        Assert.That(held, Is.Zero, "every subscriber took every entry, so the topics' logs hold none");
        Assert.That(received, Has.Count.EqualTo(80), "and nothing was delivered twice");
    }

    [Test]
    public async Task ASubscriberMoreThanMaxPendingBytesBehind_IsFaulted_EvenWhereItsNodeHadTheTrimmedEntriesCached()
    {
        // About 1,000 bytes an entry, so 4 fit in MaxPendingBytesPerSession and the 5th overflows.
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.MaxMessageSize = 1000;
            o.MaxPendingBytesPerSession = 4 * 1064;
            o.ServerPollTimeout = TimeSpan.FromSeconds(5);
        });
        using var alice = SecureDuplexServer.ClientFor("alice");
        var reader = await RawSession.OpenAsync(alice, server.Address);
        var behind = await RawSession.OpenAsync(alice, server.Address);
        var publisher = await RawSession.OpenAsync(alice, server.Address);
        foreach (var session in new[] { reader, behind })
        {
            using var subscribed = await session.SendTextAsync(TopicRuleTests.Command(1, "subscribe", "t"));
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        // The reader takes each publish as it comes, so on Redis this node's feed reads (and caches) every entry, while
        // the log keeps only the last 4: ids 1 to 6 are trimmed by the 10th publish.
        var received = new List<long>();
        long ack = 0;
        for (var i = 1; i <= 10; i++)
        {
            using var sent = await publisher.SendTextAsync(TopicRuleTests.Command(i, "publish", "t", new string('x', 900)));
            Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());
            while (received.Count < i)
            {
                ack = await PollAsync(reader, ack, received);
            }
        }

        // The session that never polled is more than MaxPendingBytesPerSession behind: faulted on both stores, never
        // handed what the log no longer holds.
        using var late = await behind.PollAsync(0);
        await RawSession.AssertProblemAsync(late, HttpStatusCode.Gone, "session-faulted");
        Assert.That(received, Has.Count.EqualTo(10), "the reader that kept up got every publish");
    }

    /// <summary>Polls once, acknowledging <paramref name="ack"/>; adds the frames' sequence numbers; returns the new ack.</summary>
    private static async Task<long> PollAsync(RawSession session, long ack, List<long> received)
    {
        using var poll = await session.PollAsync(ack);
        Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.OK).Or.EqualTo(HttpStatusCode.NoContent), await poll.Content.ReadAsStringAsync());
        foreach (var line in (await poll.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries))
        {
            using var frame = JsonDocument.Parse(line);
            if (frame.RootElement.TryGetProperty("seq", out var seq))
            {
                ack = seq.GetInt64();
                received.Add(ack);
            }
        }

        return ack;
    }

    private static async Task<long> CountLogEntriesAsync(ConnectionMultiplexer redis)
    {
        var server = redis.GetServers()[0];
        var db = redis.GetDatabase();
        var entries = 0L;
        await foreach (var key in server.KeysAsync(pattern: "*:log", pageSize: 1000))
        {
            entries += await db.ListLengthAsync(key);
        }

        return entries;
    }
}
