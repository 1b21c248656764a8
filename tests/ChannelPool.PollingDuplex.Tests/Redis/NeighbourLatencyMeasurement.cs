using System.Diagnostics;
using System.Net;
using System.Text;
using System.Text.Json;
using ChannelPool.PollingDuplex.RateLimiting;
using ChannelPool.PollingDuplex.Redis;
using ChannelPool.PollingDuplex.Tests.Security;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// Issue 38's neighbour figure: on Redis with two nodes, one user uses every allowance a request has (16 sessions, 128
/// subscriptions each, 64 publishes a send, as fast as the shipped rate limiter lets it), and another user's publish to
/// a held poll on the other node is timed, before and during. A measurement, not a check (a timed assertion would fail
/// on a loaded machine): run by hand with
/// <c>dotnet test tests/ChannelPool.PollingDuplex.Tests -c Release --filter "FullyQualifiedName~NeighbourLatencyMeasurement" --logger "console;verbosity=normal"</c>.
/// </summary>
[Explicit("A measurement for docs/performance.md; it prints figures and checks only that the requests succeed.")]
public class NeighbourLatencyMeasurement
{
    private const int Rounds = 60;

    [Test]
    public async Task PrintsAnotherUsersLatencyOnTheOtherNode_WhileOneUserUsesEveryAllowance()
    {
        static void Options(PollingDuplexOptions o)
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromSeconds(5);
            o.FirstPollTimeout = TimeSpan.FromMinutes(2);
        }

        static void Limited(IServiceCollection services) =>
            services.AddRateLimiter(o => o.AddPolicy(PollingDuplexRateLimitPolicy.Name, new PollingDuplexRateLimitPolicy()));

        await using var first = await SecureDuplexServer.StartAsync(DuplexStore.Redis, Options, Limited, app => app.UseRateLimiter(), g => g.RequireRateLimiting(PollingDuplexRateLimitPolicy.Name));
        await using var second = await SecureDuplexServer.StartAsync(
            DuplexStore.Redis,
            Options,
            services =>
            {
                Limited(services);
                services.PostConfigure<RedisPollingDuplexOptions>(o => o.Configuration = first.RedisConfiguration!);
            },
            app => app.UseRateLimiter(),
            g => g.RequireRateLimiting(PollingDuplexRateLimitPolicy.Name));

        using var bob = SecureDuplexServer.ClientFor("bob");
        var bobs = await RawSession.OpenAsync(bob, second.Address);
        using (var subscribed = await bobs.SendTextAsync(TopicRuleTests.Command(1, "subscribe", "bob")))
        {
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        var bobSequence = 1L;
        var bobAck = 0L;
        async Task<List<double>> TimeBobAsync()
        {
            var times = new List<double>(Rounds);
            for (var i = 0; i < Rounds; i++)
            {
                var started = Stopwatch.GetTimestamp();
                var poll = bobs.PollAsync(bobAck);
                using (var sent = await bobs.SendTextAsync(TopicRuleTests.Command(++bobSequence, "publish", "bob", echo: true)))
                {
                    Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());
                }

                using var delivered = await poll;
                var body = await delivered.Content.ReadAsStringAsync();
                Assert.That(delivered.StatusCode, Is.EqualTo(HttpStatusCode.OK), body);
                times.Add(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
                foreach (var line in body.Split('\n', StringSplitOptions.RemoveEmptyEntries))
                {
                    using var frame = JsonDocument.Parse(line);
                    bobAck = frame.RootElement.GetProperty("seq").GetInt64();
                }
            }

            return times;
        }

        await TimeBobAsync(); // warm-up
        var unloaded = await TimeBobAsync();

        // Mallory, on the first node: every session a user may hold, every subscription a session may hold, and full
        // sends of publishes to those topics, each session polling so that none is faulted.
        using var mallory = SecureDuplexServer.ClientFor("mallory");
        using var stop = new CancellationTokenSource();
        var sessions = new List<RawSession>();
        for (var s = 0; s < 16; s++)
        {
            var session = await RawSession.OpenAsync(mallory, first.Address);
            sessions.Add(session);
            for (var half = 0; half < 2; half++)
            {
                var batch = string.Concat(Enumerable.Range(1, 64).Select(i => TopicRuleTests.Command((half * 64) + i, "subscribe", $"m/{s}/{(half * 64) + i}")));
                using var subscribed = await SendRespectingRetryAfterAsync(session, batch, stop.Token);
                Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK), await subscribed.Content.ReadAsStringAsync());
            }
        }

        var published = 0L;
        var limited = 0L;
        var data = new string('x', 1000);
        var load = sessions.Select((session, s) => Task.Run(async () =>
        {
            var poller = PollForeverAsync(session, stop.Token);
            var sequence = 128L;
            while (!stop.IsCancellationRequested)
            {
                var batch = new StringBuilder();
                for (var i = 1; i <= 64; i++)
                {
                    batch.Append(TopicRuleTests.Command(sequence + i, "publish", $"m/{s}/{1 + ((sequence + i) % 128)}", data));
                }

                try
                {
                    using var sent = await session.SendTextAsync(batch.ToString());
                    if (sent.StatusCode == HttpStatusCode.OK)
                    {
                        sequence += 64;
                        Interlocked.Add(ref published, 64);
                    }
                    else if (sent.StatusCode == HttpStatusCode.TooManyRequests)
                    {
                        Interlocked.Increment(ref limited);
                        await Task.Delay(sent.Headers.RetryAfter?.Delta ?? TimeSpan.FromMilliseconds(100), stop.Token);
                    }
                    else
                    {
                        Assert.Fail($"mallory's send got {(int)sent.StatusCode}: {await sent.Content.ReadAsStringAsync()}");
                    }
                }
                catch (OperationCanceledException) when (stop.IsCancellationRequested)
                {
                }
            }

            await poller;
        })).ToList();

        // Let the flood reach the limiter's steady pace before timing.
        await Task.Delay(TimeSpan.FromSeconds(3));
        var before = Interlocked.Read(ref published);
        var loadStarted = Stopwatch.GetTimestamp();
        var loaded = await TimeBobAsync();
        var rate = (Interlocked.Read(ref published) - before) / Stopwatch.GetElapsedTime(loadStarted).TotalSeconds;
        await stop.CancelAsync();
        await Task.WhenAll(load);

        TestContext.Out.WriteLine($"unloaded: median {Percentile(unloaded, 50):0.0} ms, p99 {Percentile(unloaded, 99):0.0} ms ({Rounds} publishes to a held poll on the other node)");
        TestContext.Out.WriteLine($"loaded:   median {Percentile(loaded, 50):0.0} ms, p99 {Percentile(loaded, 99):0.0} ms, while mallory published {rate:0} messages/s of 1 KB to 2,048 subscriptions in 16 sessions ({limited} sends refused 429)");
        TestContext.Out.WriteLine($"ratio:    median {Percentile(loaded, 50) / Percentile(unloaded, 50):0.00}x, p99 {Percentile(loaded, 99) / Percentile(unloaded, 99):0.00}x");
    }

    private static async Task<HttpResponseMessage> SendRespectingRetryAfterAsync(RawSession session, string ndjson, CancellationToken ct)
    {
        while (true)
        {
            var sent = await session.SendTextAsync(ndjson);
            if (sent.StatusCode != HttpStatusCode.TooManyRequests)
            {
                return sent;
            }

            var wait = sent.Headers.RetryAfter?.Delta ?? TimeSpan.FromMilliseconds(100);
            sent.Dispose();
            await Task.Delay(wait, ct);
        }
    }

    private static async Task PollForeverAsync(RawSession session, CancellationToken ct)
    {
        var ack = 0L;
        while (!ct.IsCancellationRequested)
        {
            using var poll = await session.PollAsync(ack);
            if (poll.StatusCode != HttpStatusCode.OK)
            {
                continue;
            }

            foreach (var line in (await poll.Content.ReadAsStringAsync(CancellationToken.None)).Split('\n', StringSplitOptions.RemoveEmptyEntries))
            {
                using var frame = JsonDocument.Parse(line);
                ack = frame.RootElement.GetProperty("seq").GetInt64();
            }
        }
    }

    private static double Percentile(List<double> values, int percent)
    {
        var sorted = values.Order().ToList();
        return sorted[Math.Min(sorted.Count - 1, (int)Math.Ceiling(percent / 100.0 * sorted.Count) - 1)];
    }
}
