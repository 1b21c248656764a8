using System.Net;
using System.Text.Json;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// A session's allowance is the same on both stores: what it has not taken, summed over all its topics, is held to
/// <see cref="PollingDuplexOptions.MaxPendingMessagesPerSession"/> and
/// <see cref="PollingDuplexOptions.MaxPendingBytesPerSession"/>, whatever each topic's share. In memory its one buffer
/// is; on Redis its renewals and the sweep count its share of its topics' logs (docs/polling-duplex.md, "What a
/// signed-in user can make the server hold").
/// </summary>
[TestFixture(DuplexStore.InMemory)]
[TestFixture(DuplexStore.Redis)]
public class SessionAllowanceTests(DuplexStore store)
{
    private const int Topics = 32;
    private const int Rounds = 5;

    // About 590 bytes an entry as both stores count it (a 500-character payload in its notification, plus 64), so a
    // round of one publish to each of the 32 topics is about 19 KB: a subscriber that polls holds at most two rounds
    // (one unacknowledged, one arriving), one that does not passes the allowance in the 4th round, and the 5 rounds'
    // 94 KB are under 3 KB a topic, far from the 68 KB a single log may hold.
    private const int PendingBytes = 64 * 1064;
    private static readonly string Payload = new('x', 500);

    [Test]
    public async Task ASubscriberThatSendsButNeverPolls_IsFaultedOnceItsTopicsTogetherHoldMoreThanItsAllowance_WhileOneThatPollsIsNot()
    {
        // Renewals every InactivityTimeout / 4: 2 s here.
        await using var server = await StartAsync(o => o.InactivityTimeout = TimeSpan.FromSeconds(8));
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var bob = SecureDuplexServer.ClientFor("bob");
        var quiet = await SubscribedAsync(alice, server);
        var polling = await SubscribedAsync(alice, server);
        var publisher = await RawSession.OpenAsync(bob, server.Address);
        using (var polled = await quiet.PollAsync(0))
        {
            Assert.That(polled.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "the quiet subscriber polls once, then stops");
        }

        var received = new Frames();
        for (var round = 0; round < Rounds; round++)
        {
            await PublishRoundAsync(publisher, round);
            while (received.Messages.Count < (round + 1) * Topics)
            {
                await received.PollAsync(polling);
            }
        }

        // The quiet subscriber keeps its session alive with sends (a repeated subscribe, which changes nothing); a send
        // after a renewal interval renews it, and that renewal finds it over its allowance. A generous deadline, no timing.
        var deadline = DateTime.UtcNow.AddSeconds(60);
        var sequence = Topics + 1L;
        HttpResponseMessage sent;
        while ((sent = await quiet.SendTextAsync(TopicRuleTests.Command(sequence++, "subscribe", "t1"))).StatusCode == HttpStatusCode.OK && DateTime.UtcNow < deadline)
        {
            sent.Dispose();
            await received.PollAsync(polling);
        }

        using (sent)
        {
            await RawSession.AssertProblemAsync(sent, HttpStatusCode.Gone, "session-faulted");
        }

        Assert.That(received.Messages, Has.Count.EqualTo(Rounds * Topics).And.Unique, "the subscriber that polls got every publish once");
        Assert.That(received.Gaps, Is.Zero);
        using (var again = await polling.PollAsync(received.Ack))
        {
            Assert.That(again.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "and it was not faulted: only what a session has not taken counts");
        }

        using var redis = server.RedisConfiguration is { } configuration ? await ConnectionMultiplexer.ConnectAsync(configuration) : null;
        if (redis is not null)
        {
            // The faulted session left its topics; the one that polls reports at its renewals what it took, and the logs
            // let go of it.
            long held;
            deadline = DateTime.UtcNow.AddSeconds(60);
            while ((held = await CountLogEntriesAsync(redis)) > 0 && DateTime.UtcNow < deadline)
            {
                await received.PollAsync(polling);
            }

            Assert.That(held, Is.Zero, "the topics' logs hold nothing once the quiet subscriber is gone");
        }
    }

    [Test]
    public async Task ASubscriberThatSendsButNeverPolls_IsFaultedPastMaxPendingMessagesAcrossItsTopics_WhileOneThatPollsAndSendsIsNot()
    {
        // 16 topics, a publish to each a round: a subscriber that polls between rounds is at most one round (16) behind,
        // one that stopped passes 24 in the 2nd round. The bytes (tiny payloads) stay far from their allowance.
        var topics = 16;
        await using var server = await StartAsync(o =>
        {
            o.InactivityTimeout = TimeSpan.FromSeconds(8);
            o.MaxPendingMessagesPerSession = 24;
        });
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var bob = SecureDuplexServer.ClientFor("bob");
        var quiet = await SubscribedAsync(alice, server, topics);
        var polling = await SubscribedAsync(alice, server, topics);
        var publisher = await RawSession.OpenAsync(bob, server.Address);
        using (var polled = await quiet.PollAsync(0))
        {
            Assert.That(polled.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        // The subscriber that polls also sends, so on Redis its renewals come on both paths: a send's counts the
        // messages published since its last poll ended, beyond its cursors.
        var received = new Frames();
        long quietSequence = topics + 1, pollingSequence = topics + 1;
        for (var round = 0; round < 3; round++)
        {
            await PublishRoundAsync(publisher, round, topics, "x");
            while (received.Messages.Count < (round + 1) * topics)
            {
                await received.PollAsync(polling);
            }

            using var sent = await polling.SendTextAsync(TopicRuleTests.Command(pollingSequence++, "subscribe", "t1"));
            Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());
        }

        var deadline = DateTime.UtcNow.AddSeconds(60);
        HttpResponseMessage quietSent;
        while ((quietSent = await quiet.SendTextAsync(TopicRuleTests.Command(quietSequence++, "subscribe", "t1"))).StatusCode == HttpStatusCode.OK && DateTime.UtcNow < deadline)
        {
            quietSent.Dispose();
            using var sent = await polling.SendTextAsync(TopicRuleTests.Command(pollingSequence++, "subscribe", "t1"));
            Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());
            await received.PollAsync(polling);
        }

        using (quietSent)
        {
            await RawSession.AssertProblemAsync(quietSent, HttpStatusCode.Gone, "session-faulted");
        }

        Assert.That(received.Messages, Has.Count.EqualTo(3 * topics).And.Unique);
        using var again = await polling.PollAsync(received.Ack);
        Assert.That(again.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "the subscriber that polls and sends was not faulted");
    }

    [Test]
    public async Task ASubscriberThatMakesNoRequestAtAll_IsFaultedOnceItsTopicsTogetherHoldMoreThanItsAllowance_AndTheLogsLetGo()
    {
        // On Redis the sweep (every FirstPollTimeout / 4 here) checks a session whose last renewal is two renewal
        // intervals old: 15 s after it opened, long before it would expire (30 s after its poll), which would end it
        // as expired, not faulted.
        await using var server = await StartAsync(o =>
        {
            o.InactivityTimeout = TimeSpan.FromSeconds(30);
            o.FirstPollTimeout = TimeSpan.FromSeconds(2);
        });
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var bob = SecureDuplexServer.ClientFor("bob");
        var quiet = await SubscribedAsync(alice, server);
        var publisher = await RawSession.OpenAsync(bob, server.Address);
        using (var polled = await quiet.PollAsync(0))
        {
            Assert.That(polled.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        for (var round = 0; round < Rounds; round++)
        {
            await PublishRoundAsync(publisher, round);
        }

        using var redis = server.RedisConfiguration is { } configuration ? await ConnectionMultiplexer.ConnectAsync(configuration) : null;
        if (redis is not null)
        {
            // Watched from Redis only: a request of the session would renew it and check it on that path instead.
            long held;
            var deadline = DateTime.UtcNow.AddSeconds(60);
            while ((held = await CountLogEntriesAsync(redis)) > 0 && DateTime.UtcNow < deadline)
            {
                await Task.Delay(TimeSpan.FromMilliseconds(200));
            }

            Assert.That(held, Is.Zero, "the session was ended and left its topics, so their logs hold nothing");
        }

        using var late = await quiet.PollAsync(0);
        await RawSession.AssertProblemAsync(late, HttpStatusCode.Gone, "session-faulted");
    }

    [Test]
    public async Task WithGapMarker_ASubscriberOverItsAllowance_HasTheLogsFreeWhatItSkipped_AndCountsEveryMessageAsDeliveredOrInAGap()
    {
        await using var server = await StartAsync(o =>
        {
            o.InactivityTimeout = TimeSpan.FromSeconds(8);
            o.OverflowPolicy = DuplexOverflowPolicy.GapMarker;
        });
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var bob = SecureDuplexServer.ClientFor("bob");
        var quiet = await SubscribedAsync(alice, server);
        var publisher = await RawSession.OpenAsync(bob, server.Address);
        using (var polled = await quiet.PollAsync(0))
        {
            Assert.That(polled.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        for (var round = 0; round < Rounds; round++)
        {
            await PublishRoundAsync(publisher, round);
        }

        var sequence = Topics + 1L;
        using var redis = server.RedisConfiguration is { } configuration ? await ConnectionMultiplexer.ConnectAsync(configuration) : null;
        if (redis is not null)
        {
            // Its sends renew it; the renewal that finds it over its allowance reports it as having taken through each
            // log's end, so the logs, which only it reads, let go of everything.
            long held;
            var deadline = DateTime.UtcNow.AddSeconds(60);
            while ((held = await CountLogEntriesAsync(redis)) > 0 && DateTime.UtcNow < deadline)
            {
                using var sent = await quiet.SendTextAsync(TopicRuleTests.Command(sequence++, "subscribe", "t1"));
                Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());
                await Task.Delay(TimeSpan.FromMilliseconds(250));
            }

            Assert.That(held, Is.Zero, "the logs freed what the session skipped");
        }

        // One more round; then every message published to the session is either delivered or counted in a gap, once.
        await PublishRoundAsync(publisher, Rounds);
        var frames = new Frames();
        var until = DateTime.UtcNow.AddSeconds(60);
        while (frames.Messages.Count + frames.Gaps < (Rounds + 1) * Topics && DateTime.UtcNow < until)
        {
            await frames.PollAsync(quiet);
        }

        Assert.That(frames.Messages.Count + frames.Gaps, Is.EqualTo((Rounds + 1) * Topics), $"{frames.Messages.Count} delivered, {frames.Gaps} in gaps");
        Assert.That(frames.Gaps, Is.GreaterThan(0), "the session went over its allowance");
        Assert.That(frames.Messages, Is.Unique);
    }

    private Task<SecureDuplexServer> StartAsync(Action<PollingDuplexOptions> configure) => SecureDuplexServer.StartAsync(store, o =>
    {
        o.Topics.AllowAnonymous = true;
        o.ServerPollTimeout = TimeSpan.FromSeconds(1);
        o.MaxMessageSize = 1000;
        o.MaxPendingBytesPerSession = PendingBytes;

        // The bytes decide here: 160 messages are within this count.
        o.MaxPendingMessagesPerSession = 1000;
        configure(o);
    });

    private static async Task<RawSession> SubscribedAsync(HttpClient client, SecureDuplexServer server, int topics = Topics)
    {
        var session = await RawSession.OpenAsync(client, server.Address);
        using var subscribed = await session.SendTextAsync(string.Concat(Enumerable.Range(1, topics).Select(t => TopicRuleTests.Command(t, "subscribe", $"t{t}"))));
        Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK), await subscribed.Content.ReadAsStringAsync());
        return session;
    }

    /// <summary>One publish of <paramref name="payload"/> (<see cref="Payload"/> by default) to each topic, in one send.</summary>
    private static async Task PublishRoundAsync(RawSession publisher, int round, int topics = Topics, string? payload = null)
    {
        using var sent = await publisher.SendTextAsync(string.Concat(Enumerable.Range(1, topics).Select(t => TopicRuleTests.Command((round * topics) + t, "publish", $"t{t}", payload ?? Payload))));
        Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());
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

    /// <summary>What a session's polls brought: each message's sequence number, how many messages gaps stood for, and the acknowledgement.</summary>
    private sealed class Frames
    {
        public List<long> Messages { get; } = [];

        public long Gaps { get; private set; }

        public long Ack { get; private set; }

        public async Task PollAsync(RawSession session)
        {
            using var poll = await session.PollAsync(Ack);
            var body = await poll.Content.ReadAsStringAsync();
            Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.OK).Or.EqualTo(HttpStatusCode.NoContent), body);
            foreach (var line in body.Split('\n', StringSplitOptions.RemoveEmptyEntries))
            {
                using var frame = JsonDocument.Parse(line);
                if (!frame.RootElement.TryGetProperty("seq", out var seq))
                {
                    continue;
                }

                Ack = seq.GetInt64();
                if (frame.RootElement.TryGetProperty("missed", out var missed))
                {
                    Gaps += missed.GetInt64();
                }
                else
                {
                    Messages.Add(Ack);
                }
            }
        }
    }
}
