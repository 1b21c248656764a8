using System.Net;
using System.Text;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// The figures docs/performance.md gives for what a session and a subscription hold: process memory per idle session and
/// per subscription (to a topic of its own, and to a shared one), and on Redis keys and bytes (<c>DBSIZE</c>,
/// <c>INFO memory</c>) for each. A measurement, not a check: run by hand with
/// <c>dotnet test tests/ChannelPool.PollingDuplex.Tests -c Release --filter "FullyQualifiedName~HoldingsMeasurement" --logger "console;verbosity=normal"</c>.
/// </summary>
[Explicit("A measurement for docs/performance.md; it prints figures and checks only that the requests succeed.")]
[TestFixture(DuplexStore.InMemory)]
[TestFixture(DuplexStore.Redis)]
public class HoldingsMeasurement(DuplexStore store)
{
    [Test]
    public async Task PrintsWhatASessionAndASubscriptionHold()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.MaxSessionsPerAddress = 1_000_000;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(50);
            o.MaxSubscriptionsPerSession = 1000;
            o.MaxMessagesPerSend = 1000;
        });
        using var http = SecureDuplexServer.ClientFor(null);
        using var redis = server.RedisConfiguration is { } c ? await ConnectionMultiplexer.ConnectAsync(c + ",allowAdmin=true") : null;
        async Task<(long Keys, long Bytes)> RedisNow()
        {
            if (redis is null) return (0, 0);
            var s = redis.GetServers()[0];
            var keys = await s.DatabaseSizeAsync();
            var info = await s.InfoAsync("memory");
            var used = long.Parse(info.SelectMany(g => g).First(p => p.Key == "used_memory").Value, System.Globalization.CultureInfo.InvariantCulture);
            return (keys, used);
        }

        var warm = await RawSession.OpenAsync(http, server.Address);
        using (await warm.PollAsync(0)) { }
        const int Sessions = 2000;
        var m0 = GC.GetTotalMemory(true);
        var r0 = await RedisNow();
        var sessions = new List<RawSession>();
        for (var i = 0; i < Sessions; i += 50)
        {
            sessions.AddRange(await Task.WhenAll(Enumerable.Range(0, 50).Select(async _ =>
            {
                var s = await RawSession.OpenAsync(http, server.Address);
                using (await s.PollAsync(0)) { }
                return s;
            })));
        }

        var m1 = GC.GetTotalMemory(true);
        var r1 = await RedisNow();
        TestContext.Out.WriteLine($"{store}: per idle session {(m1 - m0) / Sessions} B process; Redis {(r1.Keys - r0.Keys) / (double)Sessions:0.00} keys, {(r1.Bytes - r0.Bytes) / Sessions} B");

        // 20 subscriptions in each of 500 sessions, to topics of their own (a new topic each).
        const int Subs = 20;
        await Task.WhenAll(sessions.Take(500).Select(async (s, n) =>
        {
            var b = new StringBuilder();
            for (var i = 1; i <= Subs; i++) b.Append(TopicRuleTests.Command(i, "subscribe", $"own/{n}/{i}"));
            using var r = await s.SendTextAsync(b.ToString());
            Assert.That(r.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }));
        var m2 = GC.GetTotalMemory(true);
        var r2 = await RedisNow();
        TestContext.Out.WriteLine($"{store}: per subscription (new topic) {(m2 - m1) / (500 * Subs)} B process; Redis {(r2.Keys - r1.Keys) / (double)(500 * Subs):0.00} keys, {(r2.Bytes - r1.Bytes) / (500 * Subs)} B");

        // 20 subscriptions in each of 500 other sessions, to 20 shared topics.
        await Task.WhenAll(sessions.Skip(500).Take(500).Select(async (s, n) =>
        {
            var b = new StringBuilder();
            for (var i = 1; i <= Subs; i++) b.Append(TopicRuleTests.Command(i, "subscribe", $"shared/{i}"));
            using var r = await s.SendTextAsync(b.ToString());
            Assert.That(r.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }));
        var m3 = GC.GetTotalMemory(true);
        var r3 = await RedisNow();
        TestContext.Out.WriteLine($"{store}: per subscription (shared topic) {(m3 - m2) / (500 * Subs)} B process; Redis {(r3.Keys - r2.Keys) / (double)(500 * Subs):0.00} keys, {(r3.Bytes - r2.Bytes) / (500 * Subs)} B");
        GC.KeepAlive(sessions);
    }
}
