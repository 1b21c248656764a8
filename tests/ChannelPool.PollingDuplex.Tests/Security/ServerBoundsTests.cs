using System.Net;
using System.Security.Claims;
using System.Text;
using System.Text.Json;
using ChannelPool.PollingDuplex.RateLimiting;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// What one user can make the server hold, and the rules both stores keep the same way: sessions per user and per
/// address, subscriptions per session, messages per send, who gives way when the endpoint is full, what a publish
/// burst does, what an ended session leaves in Redis, sign-in expiry, and users without an id.
/// </summary>
[TestFixture(DuplexStore.InMemory)]
[TestFixture(DuplexStore.Redis)]
public class ServerBoundsTests(DuplexStore store)
{
    [Test]
    public async Task OneUserTryingToHold100000Subscriptions_IsRefusedAtEachCap_AndHoldsNoMoreThanTheDocumentedBound()
    {
        // Defaults: 16 sessions a user, 128 subscriptions a session, 64 messages a send. No rate limiter: the caps must
        // hold however fast the user may go.
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.FirstPollTimeout = TimeSpan.FromMinutes(2);
        });
        using var mallory = SecureDuplexServer.ClientFor("mallory");
        using var redis = server.RedisConfiguration is { } configuration ? await ConnectionMultiplexer.ConnectAsync(configuration) : null;
        var keysBefore = redis is null ? 0 : await CountKeysAsync(redis);
        var memoryBefore = GC.GetTotalMemory(forceFullCollection: true);

        var sessions = new List<RawSession>();
        var attempted = 0;
        var held = 0;
        HttpResponseMessage? refusedOpen = null;
        while (attempted < 100_000 && refusedOpen is null)
        {
            using var open = await mallory.PostAsync(new Uri(server.Address + "/sessions"), RawSession.JsonContent("{}"));
            if (open.StatusCode != HttpStatusCode.Created)
            {
                await RawSession.AssertProblemAsync(open, HttpStatusCode.TooManyRequests, "too-many-user-sessions");
                refusedOpen = open;
                break;
            }

            using var opened = JsonDocument.Parse(await open.Content.ReadAsStringAsync());
            var session = RawSession.Attach(mallory, server.Address, opened.RootElement.GetProperty("sessionId").GetString()!, opened.RootElement.GetProperty("token").GetString()!);
            sessions.Add(session);
            Assert.That(opened.RootElement.GetProperty("maxMessagesPerSend").GetInt32(), Is.EqualTo(64), "the open tells clients how many messages a send may carry");

            // Subscribe in full sends of 64 distinct topics until the session's cap refuses one.
            for (var sequence = 1L; attempted < 100_000;)
            {
                var batch = new StringBuilder();
                for (var i = 0; i < 64; i++)
                {
                    batch.Append(TopicRuleTests.Command(sequence + i, "subscribe", $"t/{sessions.Count}/{sequence + i}"));
                }

                using var sent = await session.SendTextAsync(batch.ToString());
                if (sent.StatusCode == HttpStatusCode.OK)
                {
                    attempted += 64;
                    held += 64;
                    sequence += 64;
                    continue;
                }

                var refused = await RawSession.AssertProblemAsync(sent, (HttpStatusCode)422, "too-many-subscriptions");
                Assert.That(refused.GetProperty("received").GetInt64(), Is.EqualTo(sequence), "the refused subscribe counts as received; nothing after it ran");
                Assert.That(refused.GetProperty("detail").GetString(), Does.Contain("128"));
                attempted++;
                break;
            }
        }

        Assert.That(refusedOpen, Is.Not.Null, "the 17th open is refused");
        Assert.That(sessions, Has.Count.EqualTo(16));
        Assert.That(held, Is.EqualTo(16 * 128));

        // The user's sessions still work: a poll answers, and a subscribe to a topic it holds already is no new subscription.
        using (var again = await sessions[0].SendTextAsync(TopicRuleTests.Command(129, "subscribe", "t/1/1")))
        {
            Assert.That(again.StatusCode, Is.EqualTo(HttpStatusCode.OK), await again.Content.ReadAsStringAsync());
        }

        // docs/polling-duplex.md, "What a signed-in user can make the server hold": at the defaults at most 16 sessions and
        // 2,048 subscriptions; in memory well under 8 MB of them; on Redis at most 4 keys a session, 3 a subscribed topic,
        // 3 for the user's log and 1 for the user's sessions (the endpoint's own few keys were there before).
        var memory = GC.GetTotalMemory(forceFullCollection: true) - memoryBefore;
        TestContext.Out.WriteLine($"{store}: {held} subscriptions in {sessions.Count} sessions retained {memory / 1024} KB");
        if (redis is null)
        {
            Assert.That(memory, Is.LessThan(8L * 1024 * 1024));
        }
        else
        {
            var keys = await CountKeysAsync(redis) - keysBefore;
            TestContext.Out.WriteLine($"{store}: {keys} keys");
            // Plus the endpoint's own five sets (live, pending, info, owners, sessions' owners), which the first open made.
            Assert.That(keys, Is.LessThanOrEqualTo((16 * 4) + (16 * 128 * 3) + 3 + 1 + 5));
        }

        foreach (var session in sessions)
        {
            using var closed = await session.CloseAsync();
        }

        if (redis is not null)
        {
            // Closed: each leaves its record (a 410 with the reason for its later requests) and nothing else.
            Assert.That(await WaitForKeysAsync(redis, keysBefore + 16), Is.EqualTo(keysBefore + 16));
        }
    }

    [Test]
    public async Task ASendWithMoreThanMaxMessagesPerSend_Is413TooManyMessages_AndDeliversNothing()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.MaxMessagesPerSend = 3;
        });
        using var http = SecureDuplexServer.ClientFor("alice");
        var session = await RawSession.OpenAsync(http, server.Address);
        var four = string.Concat(Enumerable.Range(1, 4).Select(i => TopicRuleTests.Command(i, "subscribe", $"t{i}")));
        var refused = await RawSession.AssertProblemAsync(await session.SendTextAsync(four), HttpStatusCode.RequestEntityTooLarge, "too-many-messages");
        Assert.That(refused.GetProperty("detail").GetString(), Does.Contain("at most 3").And.Contain("carries 4"));

        using var three = await session.SendTextAsync(string.Concat(Enumerable.Range(1, 3).Select(i => TopicRuleTests.Command(i, "subscribe", $"t{i}"))));
        Assert.That(await three.Content.ReadAsStringAsync(), Is.EqualTo("{\"received\":3}"), "the refused request delivered nothing: numbering starts at 1 again");
    }

    [Test]
    public async Task APublishBurstOf11000InOneRequest_IsRefused_AndAFullSendOfPublishesReachesBothPollingSubscribers_OnBothStoresAlike()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromSeconds(5);
        });
        using var http = SecureDuplexServer.ClientFor("alice");
        var publisher = await RawSession.OpenAsync(http, server.Address);
        var subscribers = new[] { await RawSession.OpenAsync(http, server.Address), await RawSession.OpenAsync(http, server.Address) };
        foreach (var subscriber in subscribers)
        {
            using var subscribed = await subscriber.SendTextAsync(TopicRuleTests.Command(1, "subscribe", "burst"));
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        var burst = new StringBuilder();
        for (var i = 1; i <= 11_000; i++)
        {
            burst.Append(TopicRuleTests.Command(i, "publish", "burst", data: i.ToString(System.Globalization.CultureInfo.InvariantCulture)));
        }

        await RawSession.AssertProblemAsync(await publisher.SendTextAsync(burst.ToString()), HttpStatusCode.RequestEntityTooLarge, "too-many-messages");

        // The most one request may carry, sent while neither subscriber holds a poll: the worst case for the pending limit.
        var full = string.Concat(Enumerable.Range(1, 64).Select(i => TopicRuleTests.Command(i, "publish", "burst", data: i.ToString(System.Globalization.CultureInfo.InvariantCulture))));
        using (var sent = await publisher.SendTextAsync(full))
        {
            Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());
        }

        foreach (var subscriber in subscribers)
        {
            var data = new List<int>();
            long ack = 0;
            while (data.Count < 64)
            {
                using var poll = await subscriber.PollAsync(ack);
                Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.OK), await poll.Content.ReadAsStringAsync());
                foreach (var line in (await poll.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries))
                {
                    using var frame = JsonDocument.Parse(line);
                    ack = frame.RootElement.GetProperty("seq").GetInt64();
                    data.Add(int.Parse(frame.RootElement.GetProperty("data").GetProperty("data").GetString()!, System.Globalization.CultureInfo.InvariantCulture));
                }
            }

            Assert.That(data, Is.EqualTo(Enumerable.Range(1, 64)), "every message once, in order, and the subscriber was not faulted");
        }
    }

    [Test]
    public async Task AtMaxConcurrentSessions_50UsersWhoAbandonedTheirSessions_CannotLockOutAFreshUser()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.MaxConcurrentSessions = 200;
            o.MaxSessionsPerUser = 4;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(50);
        });

        // 50 users each open sessions until their own cap, poll each once, and walk away: the endpoint is full.
        var clients = Enumerable.Range(0, 50).Select(i => SecureDuplexServer.ClientFor($"user{i}")).ToList();
        try
        {
            var abandoned = (await Task.WhenAll(clients.Select(async client =>
            {
                var sessions = new List<RawSession>();
                for (var i = 0; i < 4; i++)
                {
                    var session = await RawSession.OpenAsync(client, server.Address);
                    using var poll = await session.PollAsync(0);
                    Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
                    sessions.Add(session);
                }

                return sessions;
            }))).SelectMany(s => s).ToList();

            using (var fifth = await clients[0].PostAsync(new Uri(server.Address + "/sessions"), RawSession.JsonContent("{}")))
            {
                await RawSession.AssertProblemAsync(fifth, HttpStatusCode.TooManyRequests, "too-many-user-sessions");
            }

            using var fresh = SecureDuplexServer.ClientFor("fresh");
            var newcomer = await RawSession.OpenAsync(fresh, server.Address);
            using (var poll = await newcomer.PollAsync(0))
            {
                Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "the fresh user's open and poll succeed");
            }

            var gone = await Task.WhenAll(abandoned.Select(async session =>
            {
                using var poll = await session.PollAsync(0);
                if (poll.StatusCode == HttpStatusCode.NoContent)
                {
                    return false;
                }

                var problem = await RawSession.AssertProblemAsync(poll, HttpStatusCode.Gone, "session-evicted");
                Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("longest-idle"));
                return true;
            }));
            Assert.That(gone.Count(g => g), Is.EqualTo(1), "one abandoned session gave way, no more");

            // The fresh user gets in while a user holds more than they would; at an equal share the endpoint is full for them.
            var statuses = new List<HttpStatusCode>();
            for (var i = 0; i < 3; i++)
            {
                using var open = await fresh.PostAsync(new Uri(server.Address + "/sessions"), RawSession.JsonContent("{}"));
                statuses.Add(open.StatusCode);
                if (open.StatusCode == HttpStatusCode.ServiceUnavailable)
                {
                    await RawSession.AssertProblemAsync(open, HttpStatusCode.ServiceUnavailable, "too-many-sessions");
                }
            }

            Assert.That(statuses, Is.EqualTo(new[] { HttpStatusCode.Created, HttpStatusCode.Created, HttpStatusCode.ServiceUnavailable }));
        }
        finally
        {
            clients.ForEach(c => c.Dispose());
        }
    }

    [Test]
    public async Task AnonymousSessions_AreCappedPerRemoteAddress()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.MaxSessionsPerAddress = 3;
        });
        using var anonymous = SecureDuplexServer.ClientFor(null);
        using var alice = SecureDuplexServer.ClientFor("alice");
        for (var i = 0; i < 3; i++)
        {
            await RawSession.OpenAsync(anonymous, server.Address);
        }

        using var fourth = await anonymous.PostAsync(new Uri(server.Address + "/sessions"), RawSession.JsonContent("{}"));
        await RawSession.AssertProblemAsync(fourth, HttpStatusCode.TooManyRequests, "too-many-user-sessions");
        await RawSession.OpenAsync(alice, server.Address);
    }

    [Test]
    public async Task AClosedExpiredOrEvictedSession_LeavesOnlyItsEndRecordInRedis_NotItsRememberedOpenNorItsToken()
    {
        Assume.That(store, Is.EqualTo(DuplexStore.Redis), "counts Redis keys");
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(100);
            o.InactivityTimeout = TimeSpan.FromSeconds(1);
            o.FirstPollTimeout = TimeSpan.FromSeconds(1);
            o.MaxPendingSessions = 1;
        });
        using var redis = await ConnectionMultiplexer.ConnectAsync(server.RedisConfiguration!);
        using var alice = SecureDuplexServer.ClientFor("alice");

        // Each opens with an openId, whose remembered answer holds the token while the session lives, and no longer.
        async Task<RawSession> SubscribedAsync(string topic, bool poll)
        {
            var session = await RawSession.OpenAsync(alice, server.Address, openId: OpenIdOf(topic));
            Assert.That(await OpenKeysAsync(redis, OpenIdOf(topic)), Has.Count.EqualTo(1), "the open is remembered while its session lives");
            using (var subscribed = await session.SendTextAsync(TopicRuleTests.Command(1, "subscribe", topic)))
            {
                Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
            }

            if (poll)
            {
                using var polled = await session.PollAsync(0);
            }

            return session;
        }

        // A session that stays, so the endpoint's and the user's own keys are there throughout.
        var stays = await SubscribedAsync("stays", poll: true);
        var baseline = await CountKeysAsync(redis);

        var closed = await SubscribedAsync("closed", poll: true);
        Assert.That(await CountKeysAsync(redis), Is.GreaterThan(baseline));
        using (var close = await closed.CloseAsync())
        {
            Assert.That(close.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        Assert.That(await WaitForKeysAsync(redis, baseline + 1), Is.EqualTo(baseline + 1), "closed: only its record");
        Assert.That(await KeysOfAsync(redis, closed.Id), Has.Count.EqualTo(1).And.All.EndsWith(":x"));
        Assert.That(await OpenKeysAsync(redis, OpenIdOf("closed")), Is.Empty, "closed: its remembered open, with its token, is gone");

        // Never polls: the next open evicts it (MaxPendingSessions 1).
        var evicted = await SubscribedAsync("evicted", poll: false);
        var evictor = await RawSession.OpenAsync(alice, server.Address);
        await RawSession.AssertProblemAsync(await evicted.PollAsync(0), HttpStatusCode.Gone, "session-evicted");
        using (var polled = await evictor.PollAsync(0))
        {
        }

        Assert.That(await KeysOfAsync(redis, evicted.Id), Has.Count.EqualTo(1).And.All.EndsWith(":x"), "evicted: only its record");
        Assert.That(await TopicKeysAsync(redis, "evicted"), Is.Empty);
        Assert.That(await WaitForNoOpenKeyAsync(redis, OpenIdOf("evicted")), Is.Empty, "evicted: its remembered open is gone");

        // Polls once, then goes quiet: it expires after a second, and the sweep leaves its topic.
        var expired = await SubscribedAsync("expired", poll: true);
        var deadline = DateTime.UtcNow.AddSeconds(20);
        while ((await KeysOfAsync(redis, expired.Id)).Count > 1 || (await TopicKeysAsync(redis, "expired")).Count > 0 || (await OpenKeysAsync(redis, OpenIdOf("expired"))).Count > 0)
        {
            Assert.That(DateTime.UtcNow, Is.LessThan(deadline), "the expired session's keys are still there");
            using (var keepAlive = await stays.PollAsync(0))
            {
            }

            using (var keepEvictor = await evictor.PollAsync(0))
            {
            }
        }

        Assert.That(await KeysOfAsync(redis, expired.Id), Has.Count.EqualTo(1).And.All.EndsWith(":x"), "expired: only its record");
        Assert.That(await TopicKeysAsync(redis, "closed"), Is.Empty);
        foreach (var ended in new[] { closed, evicted, expired })
        {
            Assert.That(await StringValuesAsync(redis), Has.None.Contains(ended.Token), "no key holds an ended session's token");
        }

        Assert.That(await StringValuesAsync(redis), Has.Some.Contains(stays.Token), "the live session's remembered open still holds its token, for a retried open");
    }

    [Test]
    public async Task WithCloseOnAuthenticationExpiration_AHeldPollEndsAtTheSignInsExpiry_With410AuthenticationExpired()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromSeconds(30);
            o.CloseOnAuthenticationExpiration = true;
        });

        // JWT expiry has whole-second precision: this one lapses in 1 to 3 seconds.
        var expires = DateTime.UtcNow.AddSeconds(3);
        using var shortLived = SecureDuplexServer.ClientWithToken(SecureDuplexServer.TokenWith([new Claim("sub", "alice")], expires));
        using var bob = SecureDuplexServer.ClientFor("bob");
        var session = await RawSession.OpenAsync(shortLived, server.Address);
        using (var subscribed = await session.SendTextAsync(TopicRuleTests.Command(1, "subscribe", "news")))
        {
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        var clock = System.Diagnostics.Stopwatch.StartNew();
        using var poll = await session.PollAsync(0);
        await RawSession.AssertProblemAsync(poll, HttpStatusCode.Gone, "authentication-expired");
        Assert.That(clock.Elapsed, Is.LessThan(TimeSpan.FromSeconds(15)), "ended at the expiry, not at the poll timeout");

        // Published after the expiry: nothing of the session is left to deliver it to.
        var publisher = await RawSession.OpenAsync(bob, server.Address);
        using (var published = await publisher.SendTextAsync(TopicRuleTests.Command(1, "publish", "news")))
        {
            Assert.That(published.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        await RawSession.AssertProblemAsync(await session.PollAsync(0), HttpStatusCode.Gone, "authentication-expired");
    }

    [Test]
    public async Task WithoutCloseOnAuthenticationExpiration_ASessionOutlivesItsSignIn()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromSeconds(4);
        });
        using var shortLived = SecureDuplexServer.ClientWithToken(SecureDuplexServer.TokenWith([new Claim("sub", "alice")], DateTime.UtcNow.AddSeconds(2)));
        var session = await RawSession.OpenAsync(shortLived, server.Address);
        using var poll = await session.PollAsync(0);
        Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "off by default: the poll is held to its timeout");
    }

    [Test]
    public async Task ASignedInUserWithAnEmptyId_IsRefused403UnidentifiedUser_NeverTakenForAnonymous()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o => o.Topics.AllowAnonymous = true);
        using var empty = SecureDuplexServer.ClientWithToken(SecureDuplexServer.TokenWith([new Claim("sub", string.Empty)], DateTime.UtcNow.AddHours(1)));
        using var anonymous = SecureDuplexServer.ClientFor(null);

        using var open = await empty.PostAsync(new Uri(server.Address + "/sessions"), RawSession.JsonContent("{}"));
        var problem = await RawSession.AssertProblemAsync(open, HttpStatusCode.Forbidden, "unidentified-user");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("empty"));

        // An anonymous session's requests carrying the empty-id user are refused too, rather than taken as anonymous.
        var session = await RawSession.OpenAsync(anonymous, server.Address);
        var borrowed = RawSession.Attach(empty, server.Address, session.Id, session.Token);
        await RawSession.AssertProblemAsync(await borrowed.PollAsync(0), HttpStatusCode.Forbidden, "unidentified-user");
        await RawSession.AssertProblemAsync(await borrowed.SendTextAsync(TopicRuleTests.Command(1, "subscribe", "news")), HttpStatusCode.Forbidden, "unidentified-user");
        await RawSession.AssertProblemAsync(await borrowed.CloseAsync(), HttpStatusCode.Forbidden, "unidentified-user");
    }

    [Test]
    public async Task ASignedInUserWithNoIdClaim_Gets403UnidentifiedUser_Not500()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o => o.Topics.AllowAnonymous = true);
        using var noId = SecureDuplexServer.ClientWithToken(SecureDuplexServer.TokenWith([new Claim("role", "reader")], DateTime.UtcNow.AddHours(1)));
        using var open = await noId.PostAsync(new Uri(server.Address + "/sessions"), RawSession.JsonContent("{}"));
        var problem = await RawSession.AssertProblemAsync(open, HttpStatusCode.Forbidden, "unidentified-user");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("UserIdSelector"));
    }

    [Test]
    public async Task TheRateLimitPolicy_ChargesASendOneTokenPerMessage_AndLimitsAnonymousPollsByAddress()
    {
        Assume.That(store, Is.EqualTo(DuplexStore.InMemory), "the limiter sits in front of the endpoint, whatever its store");
        await using var server = await SecureDuplexServer.StartAsync(
            store,
            o =>
            {
                o.Topics.AllowAnonymous = true;
                o.ServerPollTimeout = TimeSpan.FromMilliseconds(50);
            },
            services: s => s.AddRateLimiter(limiter => limiter.AddPolicy(PollingDuplexRateLimitPolicy.Name, new PollingDuplexRateLimitPolicy(burst: 10, perSecond: 1, anonymousPollBurst: 3, anonymousPollsPerSecond: 1))),
            pipeline: app => app.UseRateLimiter(),
            routes: group => group.RequireRateLimiting(PollingDuplexRateLimitPolicy.Name));
        using var alice = SecureDuplexServer.ClientFor("alice");
        var session = await RawSession.OpenAsync(alice, server.Address);

        // The open took 1 of 10; a send of 8 takes 8, so the next send of 8 finds 1 (or 2) left.
        using (var eight = await session.SendTextAsync(string.Concat(Enumerable.Range(1, 8).Select(i => TopicRuleTests.Command(i, "subscribe", $"t{i}")))))
        {
            Assert.That(eight.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        var limited = await RawSession.AssertProblemAsync(
            await session.SendTextAsync(string.Concat(Enumerable.Range(9, 8).Select(i => TopicRuleTests.Command(i, "subscribe", $"t{i}")))),
            HttpStatusCode.TooManyRequests,
            "rate-limited");
        Assert.That(limited.GetProperty("detail").GetString(), Does.Contain("each message"));

        // Polls of a signed-in user are not limited; anonymous polls, even with a forged token, are, by address.
        for (var i = 0; i < 5; i++)
        {
            using var poll = await session.PollAsync(0);
            Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        using var anonymous = SecureDuplexServer.ClientFor(null);
        var forged = RawSession.Attach(anonymous, server.Address, "nonexistent", "forged");
        var statuses = new List<HttpStatusCode>();
        for (var i = 0; i < 5; i++)
        {
            using var poll = await forged.PollAsync(0);
            statuses.Add(poll.StatusCode);
        }

        Assert.That(statuses.Take(3), Is.All.EqualTo(HttpStatusCode.NotFound), "the address's bucket of 3");
        Assert.That(statuses, Does.Contain(HttpStatusCode.TooManyRequests));
    }

    private static async Task<long> CountKeysAsync(ConnectionMultiplexer redis)
    {
        var count = 0L;
        await foreach (var _ in redis.GetServers()[0].KeysAsync(pattern: "*", pageSize: 1000))
        {
            count++;
        }

        return count;
    }

    private static async Task<List<string>> KeysOfAsync(ConnectionMultiplexer redis, string sessionId)
    {
        var keys = new List<string>();
        await foreach (var key in redis.GetServers()[0].KeysAsync(pattern: $"*{sessionId}*"))
        {
            keys.Add(key.ToString());
        }

        return keys;
    }

    private static string OpenIdOf(string topic) => $"open-id-of-{topic}-0123456789";

    private static async Task<List<string>> OpenKeysAsync(ConnectionMultiplexer redis, string openId)
    {
        var keys = new List<string>();
        await foreach (var key in redis.GetServers()[0].KeysAsync(pattern: $"*{{o:{openId}}}*"))
        {
            keys.Add(key.ToString());
        }

        return keys;
    }

    /// <summary>An end forgets its open in the background: waits (briefly) until the open's key is gone.</summary>
    private static async Task<List<string>> WaitForNoOpenKeyAsync(ConnectionMultiplexer redis, string openId)
    {
        var deadline = DateTime.UtcNow.AddSeconds(20);
        List<string> keys;
        while ((keys = await OpenKeysAsync(redis, openId)).Count > 0 && DateTime.UtcNow < deadline)
        {
            await Task.Delay(50);
        }

        return keys;
    }

    /// <summary>The values of every string key: where a token would sit in plain text.</summary>
    private static async Task<List<string>> StringValuesAsync(ConnectionMultiplexer redis)
    {
        var db = redis.GetDatabase();
        var values = new List<string>();
        await foreach (var key in redis.GetServers()[0].KeysAsync(pattern: "*", pageSize: 1000))
        {
            if (await db.KeyTypeAsync(key) == RedisType.String && (string?)await db.StringGetAsync(key) is { } value)
            {
                values.Add(value);
            }
        }

        return values;
    }

    private static async Task<List<string>> TopicKeysAsync(ConnectionMultiplexer redis, string topic)
    {
        var keys = new List<string>();
        await foreach (var key in redis.GetServers()[0].KeysAsync(pattern: $"*{{t:{topic}}}*"))
        {
            keys.Add(key.ToString());
        }

        return keys;
    }

    /// <summary>Ends leave their sources in the background: waits (briefly) until the key count comes down to <paramref name="expected"/>.</summary>
    private static async Task<long> WaitForKeysAsync(ConnectionMultiplexer redis, long expected)
    {
        var deadline = DateTime.UtcNow.AddSeconds(10);
        long count;
        while ((count = await CountKeysAsync(redis)) > expected && DateTime.UtcNow < deadline)
        {
            await Task.Delay(50);
        }

        return count;
    }
}
