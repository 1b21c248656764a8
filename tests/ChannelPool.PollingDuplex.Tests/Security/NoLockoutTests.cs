using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Time.Testing;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// No lockout: at the pending limit an open evicts the oldest session that never polled, so opens that never poll cannot
/// keep out a client that polls at once; only a poll ends a session's pending state, and sends never move its
/// first-poll deadline.
/// </summary>
[TestFixture(DuplexStore.InMemory)]
[TestFixture(DuplexStore.Redis)]
public class NoLockoutTests(DuplexStore store)
{
    [Test]
    public async Task AtThePendingLimit_AnOpenEvictsTheOldestSessionThatNeverPolled_Which410sSessionEvicted()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.MaxPendingSessions = 2;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(100);
        });
        using var http = SecureDuplexServer.ClientFor(null);
        var polled = await RawSession.OpenAsync(http, server.Address);
        using (await polled.PollAsync(0))
        {
        }

        var oldest = await RawSession.OpenAsync(http, server.Address);
        var younger = await RawSession.OpenAsync(http, server.Address);
        var newcomer = await RawSession.OpenAsync(http, server.Address);

        var evicted = await RawSession.AssertProblemAsync(await oldest.PollAsync(0), HttpStatusCode.Gone, "session-evicted");
        Assert.That(evicted.GetProperty("detail").GetString(), Does.Contain(oldest.Id).And.Contain("poll at once"));
        foreach (var kept in new[] { polled, younger, newcomer })
        {
            using var poll = await kept.PollAsync(0);
            Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "a session that polled is never evicted, and the younger ones stay");
        }
    }

    [Test]
    public async Task ASessionThatSendsButNeverPolls_ExpiresAtItsFirstPollDeadline()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.FirstPollTimeout = TimeSpan.FromSeconds(1);
        });
        using var http = SecureDuplexServer.ClientFor(null);
        var session = await RawSession.OpenAsync(http, server.Address);
        var opened = Stopwatch.StartNew();

        // A send every 100 ms renews the session's activity, but not its first-poll deadline.
        HttpResponseMessage response;
        var sequence = 0;
        while (true)
        {
            response = await session.SendTextAsync(TopicRuleTests.Command(++sequence, "publish", "nobody-listens"));
            if (response.StatusCode != HttpStatusCode.OK || opened.Elapsed > TimeSpan.FromSeconds(20))
            {
                break;
            }

            response.Dispose();
            await Task.Delay(100);
        }

        await RawSession.AssertProblemAsync(response, HttpStatusCode.Gone, "session-expired");
        Assert.That(opened.Elapsed, Is.LessThan(TimeSpan.FromSeconds(8)), "expired about a second after its open, however often it sent");
    }

    /// <summary>
    /// The issue's flood, as an outsider would run it: one client fires 5,000 opens that never poll, as fast as the server
    /// takes them; another keeps 1,000 sessions sending (each publishes to a topic it subscribed to, asking for an echo)
    /// and never polling, reopening each one that ends. Meanwhile a third client opens and polls at once, every 100 ms:
    /// every one of its opens and first polls must succeed, and the memory retained meanwhile stays under a ceiling.
    /// </summary>
    [Test]
    public async Task AFloodOfOpensAndSessionsThatNeverPoll_NeverLocksOutAClientThatPollsAtOnce_InBoundedMemory()
    {
        const int FloodOpens = 5_000;
        const int Senders = 1_000;
        const int Workers = 32;

        // Measured on the 2-core machine (docs/polling-duplex.md, "Security"): 14 MB retained at the peak, for the 1,024
        // pending sessions, up to 10,000 ended-session records, the senders' queued echoes, both sides' connections and the
        // test's own bookkeeping. The ceiling leaves room for runtime noise, not for anything that grows with the flood.
        const long CeilingBytes = 32L * 1024 * 1024;
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(200);

            // The flood comes from one address, as the victim does: lifted, so the pending eviction alone is tested.
            o.MaxSessionsPerAddress = 1_000_000;
        });
        using var floodHttp = SecureDuplexServer.ClientFor(null);
        using var senderHttp = SecureDuplexServer.ClientFor(null);
        using var goodHttp = SecureDuplexServer.ClientFor(null);
        await ProbeAsync(goodHttp, server.Address);
        var baseline = GC.GetTotalMemory(forceFullCollection: true);
        using var stop = new CancellationTokenSource();
        var peak = 0L;
        var sampler = Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                peak = Math.Max(peak, GC.GetTotalMemory(forceFullCollection: true) - baseline);
                await Task.Delay(500);
            }
        });

        var clock = Stopwatch.StartNew();
        var floodStatuses = new ConcurrentDictionary<HttpStatusCode, int>();
        var flood = Parallel.ForEachAsync(Enumerable.Range(0, FloodOpens), new ParallelOptions { MaxDegreeOfParallelism = Workers }, async (_, token) =>
        {
            using var opened = await floodHttp.PostAsync(new Uri(server.Address + "/sessions"), RawSession.JsonContent("{}"), token);
            floodStatuses.AddOrUpdate(opened.StatusCode, 1, (_, n) => n + 1);
        });
        var floodTook = flood.ContinueWith(_ => clock.Elapsed, TaskScheduler.Default);

        var sent = 0;
        var reopened = 0;
        var senders = Task.WhenAll(Enumerable.Range(0, Workers).Select(worker => Task.Run(async () =>
        {
            var mine = new List<(RawSession Session, long Next)>();
            for (var i = worker; i < Senders; i += Workers)
            {
                mine.Add((await RawSession.OpenAsync(senderHttp, server.Address), 1));
            }

            while (!stop.IsCancellationRequested)
            {
                for (var i = 0; i < mine.Count && !stop.IsCancellationRequested; i++)
                {
                    var (session, next) = mine[i];
                    var body = next == 1 ? TopicRuleTests.Command(1, "subscribe", session.Id) : TopicRuleTests.Command(next, "publish", session.Id, echo: true);
                    using var response = await session.SendTextAsync(body);
                    if (response.StatusCode == HttpStatusCode.OK)
                    {
                        Interlocked.Increment(ref sent);
                        mine[i] = (session, next + 1);
                    }
                    else
                    {
                        // Evicted, expired or overflowed (nobody reads its echoes): the flood opens another.
                        Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.Gone), await response.Content.ReadAsStringAsync());
                        Interlocked.Increment(ref reopened);
                        mine[i] = (await RawSession.OpenAsync(senderHttp, server.Address), 1);
                    }
                }
            }
        })));

        var probes = new List<Task<string?>>();
        using (var every = new PeriodicTimer(TimeSpan.FromMilliseconds(100)))
        {
            while (!flood.IsCompleted || clock.Elapsed < TimeSpan.FromSeconds(5))
            {
                probes.Add(ProbeAsync(goodHttp, server.Address));
                await every.WaitForNextTickAsync();
            }
        }

        await flood;
        var outcomes = await Task.WhenAll(probes).Within();
        await stop.CancelAsync();
        await senders.WaitAsync(TimeSpan.FromSeconds(60));
        await sampler;

        TestContext.Out.WriteLine(
            $"{FloodOpens:N0} flood opens in {(await floodTook).TotalSeconds:0.0} s ({FloodOpens / (await floodTook).TotalSeconds:N0}/s): {string.Join(", ", floodStatuses.Select(s => $"{(int)s.Key} ×{s.Value:N0}"))}; " +
            $"{sent:N0} sends and {reopened:N0} reopened sessions from {Senders:N0} senders; {outcomes.Length} probes; peak retained {peak / 1024.0 / 1024.0:0.0} MB");
        Assert.That(outcomes, Has.Length.GreaterThanOrEqualTo(30));
        Assert.That(outcomes.Where(o => o is not null), Is.Empty, "every probe opened and polled");
        Assert.That(floodStatuses.Keys, Is.EquivalentTo(new[] { HttpStatusCode.Created }), "opens are never refused at the pending limit: the oldest never-polled session makes room");
        Assert.That(reopened, Is.GreaterThan(0), "the flood evicted the senders' sessions too: they never polled");
        Assert.That(peak, Is.LessThan(CeilingBytes));
    }

    /// <summary>Opens and polls at once, as a real client does; returns what went wrong, or null.</summary>
    private static async Task<string?> ProbeAsync(HttpClient http, Uri endpoint)
    {
        using var opened = await http.PostAsync(new Uri(endpoint + "/sessions"), RawSession.JsonContent("{}"));
        if (opened.StatusCode != HttpStatusCode.Created)
        {
            return $"open: {(int)opened.StatusCode} {await opened.Content.ReadAsStringAsync()}";
        }

        using var json = System.Text.Json.JsonDocument.Parse(await opened.Content.ReadAsStringAsync());
        var session = RawSession.Attach(http, endpoint, json.RootElement.GetProperty("sessionId").GetString()!, json.RootElement.GetProperty("token").GetString()!);
        using var polled = await session.PollAsync(0);
        if (polled.StatusCode != HttpStatusCode.NoContent)
        {
            return $"poll: {(int)polled.StatusCode} {await polled.Content.ReadAsStringAsync()}";
        }

        using (await session.CloseAsync())
        {
        }

        return null;
    }
}

/// <summary>The in-memory store's pending sessions, on fake time: the first-poll deadline counts from the open, and eviction order.</summary>
public class InMemoryPendingSessionsTests
{
    [Test]
    public async Task Sends_NeverRenewTheFirstPollDeadline_AndOnlyAPollEndsThePendingState()
    {
        var time = new FakeTimeProvider();
        using var memory = new InMemorySessionStore("/d", new PollingDuplexOptions { MaxPendingSessions = 2 }, new RecordingHandler(), time, NullLogger.Instance);
        var (sender, senderToken) = Open(memory);
        var (poller, pollerToken) = Open(memory);

        // The issue's case: a session that sends every second kept its pending slot past the deadline, for ever.
        for (var second = 1; second <= 14; second++)
        {
            time.Advance(TimeSpan.FromSeconds(1));
            Assert.That((await memory.FindAsync(sender.Id, senderToken, null, CancellationToken.None)).Status, Is.EqualTo(DuplexLookupStatus.Found));
        }

        Assert.That(memory.PendingCount, Is.EqualTo(2), "sends do not end the pending state");
        Assert.That((await memory.BeginPollAsync(poller.Id, pollerToken, null, 0, CancellationToken.None)).Poll, Is.Not.Null);
        Assert.That(memory.PendingCount, Is.EqualTo(1), "a poll does");

        time.Advance(TimeSpan.FromSeconds(2));

        Assert.That(sender.EndReason, Is.EqualTo(DuplexSessionEndReason.Expired), "15 s after its open, as if it had never sent");
        Assert.That(poller.EndReason, Is.Null);
        Assert.That(memory.PendingCount, Is.Zero);
    }

    [Test]
    public async Task Eviction_GoesInOpenOrder_AndNeverTakesASessionThatPolled()
    {
        using var memory = new InMemorySessionStore("/d", new PollingDuplexOptions { MaxPendingSessions = 3 }, new RecordingHandler(), new FakeTimeProvider(), NullLogger.Instance);
        var (a, aToken) = Open(memory);
        var (b, _) = Open(memory);
        var (c, _) = Open(memory);
        Assert.That((await memory.BeginPollAsync(a.Id, aToken, null, 0, CancellationToken.None)).Poll, Is.Not.Null);

        var (d, _) = Open(memory);
        var (e, _) = Open(memory);
        var (f, _) = Open(memory);
        Assert.That(memory.PendingCount, Is.EqualTo(3));
        var (g, _) = Open(memory);

        Assert.That(new[] { b, c, d }.Select(s => s.EndReason), Is.All.EqualTo(DuplexSessionEndReason.Evicted));
        Assert.That(new[] { a, e, f, g }.Select(s => s.EndReason), Is.All.Null);
        Assert.That((memory.SessionCount, memory.PendingCount), Is.EqualTo((4, 3)));
    }

    private static (DuplexSession Session, string Token) Open(InMemorySessionStore memory)
    {
        Assert.That(memory.TryReserve(), Is.Null);
        return memory.Create(DuplexEncoding.Text, PollingDuplexMode.MultipleMessagesPerPoll);
    }
}
