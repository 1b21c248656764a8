using System.Net;
using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// The limits on Redis, with topics read from logs: what a session may fall behind by, what happens past it, the
/// first-poll deadline, and the pending cap that evicts rather than locks out.
/// </summary>
public class RedisLimitTests
{
    [TestCase(DuplexOverflowPolicy.GapMarker)]
    [TestCase(DuplexOverflowPolicy.FaultSession)]
    public async Task MessagesPublishedWhileNoPollIsOutstanding_BeyondTheLimit_FollowTheOverflowPolicy(DuplexOverflowPolicy policy)
    {
        await using var node = await StartAsync(o =>
        {
            o.MaxPendingMessagesPerSession = 5;
            o.OverflowPolicy = policy;
        });
        var subscriber = await SubscribedAsync(node);
        Assert.That((await node.PollAsync(subscriber, 0, TimeSpan.Zero)).Frames, Is.Empty, "a poll that ended: from here on nothing is outstanding");
        await PublishAsync(node, 12);

        var (start, frames) = await node.PollAsync(subscriber, 0, TimeSpan.FromSeconds(5));
        if (policy == DuplexOverflowPolicy.GapMarker)
        {
            Assert.That(frames.Select(Describe), Is.EqualTo(new[] { "1:1", "2:2", "3:3", "4:4", "5:5", "6:gap 7" }), "the first five, then one gap counting the seven dropped");
            var (_, next) = await node.PollAsync(subscriber, 6, TimeSpan.Zero);
            Assert.That(next, Is.Empty);
        }
        else
        {
            var ended = start.Poll is null ? start.Lookup : (await node.PollAsync(subscriber, 0, TimeSpan.Zero)).Start.Lookup;
            Assert.That(frames.Select(Describe), Is.Empty);
            Assert.That((ended.Status, ended.EndReason), Is.EqualTo((DuplexLookupStatus.Ended, (DuplexSessionEndReason?)DuplexSessionEndReason.Overflow)));
        }
    }

    [Test]
    public async Task MessagesPublishedWhileAPollIsHeld_DoNotCount_EvenBeyondOneResponse()
    {
        await using var node = await StartAsync(o => o.MaxPendingMessagesPerSession = 5);
        var subscriber = await SubscribedAsync(node);
        var held = await node.Store.BeginPollAsync(subscriber.Id, subscriber.Token, null, 0, CancellationToken.None);
        await PublishAsync(node, 12);
        var first = new List<DuplexFrame>();
        var take = await held.Poll!.TakeAsync(first, 5, CancellationToken.None);
        Assert.That(take.Status, Is.EqualTo(DuplexTakeStatus.Frames));
        await held.Poll.EndAsync(CancellationToken.None);

        var received = first.Select(Describe).ToList();
        for (var ack = first[^1].Sequence; received.Count < 12;)
        {
            var (_, frames) = await node.PollAsync(subscriber, ack, TimeSpan.FromSeconds(5), max: 5);
            Assert.That(frames, Is.Not.Empty, $"after {string.Join(", ", received)}");
            received.AddRange(frames.Select(Describe));
            ack = frames[^1].Sequence;
        }

        Assert.That(received, Is.EqualTo(Enumerable.Range(1, 12).Select(i => $"{i}:{i}")));
    }

    [Test]
    public async Task ASessionWhoseCursorFellOffTheLog_GetsAGapWithTheExactCount_ThenWhatIsLeft()
    {
        await using var node = await StartAsync(o =>
        {
            o.OverflowPolicy = DuplexOverflowPolicy.GapMarker;
            o.MaxMessageSize = 1000;
            o.MaxPendingBytesPerSession = 3 * 1000;
            o.MaxPendingMessagesPerSession = 2;
        });
        var subscriber = await SubscribedAsync(node);
        var held = await node.Store.BeginPollAsync(subscriber.Id, subscriber.Token, null, 0, CancellationToken.None);
        var padding = new string('x', 900);
        for (var i = 1; i <= 10; i++)
        {
            await node.Store.PublishAsync("news", DuplexMessage.FromJson(new { topic = "news", data = i, padding }), CancellationToken.None);
        }

        // The log keeps what fits 3,000 bytes (two entries of about 960): the session, held back, missed the rest.
        var frames = new List<DuplexFrame>();
        Assert.That((await held.Poll!.TakeAsync(frames, 100, CancellationToken.None)).Status, Is.EqualTo(DuplexTakeStatus.Frames));
        await held.Poll.EndAsync(CancellationToken.None);
        Assert.That(frames.Select(Describe), Is.EqualTo(new[] { "1:gap 8", "2:9", "3:10" }));
    }

    [Test]
    public async Task SendsBeforeTheFirstPoll_NeverExtendItsDeadline()
    {
        await using var node = await StartAsync(o => o.FirstPollTimeout = TimeSpan.FromMilliseconds(800));
        var session = await node.OpenAsync();
        var sent = System.Diagnostics.Stopwatch.StartNew();
        for (var seq = 1; sent.Elapsed < TimeSpan.FromMilliseconds(600); seq++)
        {
            Assert.That((await node.CommandAsync(session, seq, "{\"op\":\"subscribe\",\"topic\":\"t\"}")).Status, Is.EqualTo(DuplexReceiveStatus.Accepted));
            await Task.Delay(100);
        }

        await Eventually.That(
            () => node.Store.FindAsync(session.Id, session.Token, null, CancellationToken.None).AsTask().Result.Status == DuplexLookupStatus.Ended,
            "the session expired at its first-poll deadline, sends or no sends");
        Assert.That(sent.Elapsed, Is.LessThan(TimeSpan.FromSeconds(3)));
        var ended = await node.Store.FindAsync(session.Id, session.Token, null, CancellationToken.None);
        Assert.That(ended.EndReason, Is.EqualTo(DuplexSessionEndReason.Expired));
    }

    [Test]
    public async Task AtThePendingCap_AnOpenEvictsTheOldestSessionThatNeverPolled()
    {
        await using var node = await StartAsync(o => o.MaxPendingSessions = 2);
        var a = await node.OpenAsync();
        var b = await node.OpenAsync();
        var c = await node.OpenAsync();
        Assert.That(await EndReasonAsync(node, a), Is.EqualTo(DuplexSessionEndReason.Evicted), "the oldest never-polled session gave way");
        Assert.That(await EndReasonAsync(node, b), Is.Null);

        // A poll ends b's pending state: it is no longer anyone's to evict.
        Assert.That((await node.PollAsync(b, 0, TimeSpan.Zero)).Start.Poll, Is.Not.Null);
        var d = await node.OpenAsync();
        var e = await node.OpenAsync();
        Assert.That(await EndReasonAsync(node, c), Is.EqualTo(DuplexSessionEndReason.Evicted));
        Assert.That(new[] { await EndReasonAsync(node, b), await EndReasonAsync(node, d), await EndReasonAsync(node, e) }, Has.All.Null);
    }

    [Test]
    public async Task AFloodOfOpensThatNeverPoll_NeverLocksOutAClientThatPolls()
    {
        await using var cluster = await DuplexCluster.StartAsync(
            nodes: 1,
            configure: o =>
            {
                o.MaxPendingSessions = 64;
                o.ServerPollTimeout = TimeSpan.FromMilliseconds(100);
            },
            redis: await RedisServers.ConfigurationAsync(RedisKind.OneServer));
        using var http = DuplexCluster.CreateHttpClient();
        using var stop = new CancellationTokenSource();
        var flooded = 0;
        var flood = Task.WhenAll(Enumerable.Range(0, 4).Select(_ => Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                using var opened = await http.PostAsync(new Uri(cluster.PubSub + "/sessions"), RawSession.JsonContent("{}"));
                Assert.That(opened.StatusCode, Is.EqualTo(HttpStatusCode.Created));
                Interlocked.Increment(ref flooded);
            }
        })));

        for (var i = 0; i < 20; i++)
        {
            var session = await RawSession.OpenAsync(http, cluster.PubSub);
            using var polled = await session.PollAsync(0);
            Assert.That(polled.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), $"open {i} got in and polled, after {flooded} flooding opens");
            await Task.Delay(100);
        }

        await stop.CancelAsync();
        await flood.Within();
        Assert.That(flooded, Is.GreaterThan(64 * 4), "the flood was many times the pending cap");
    }

    private static async Task<RedisStoreNode> StartAsync(Action<PollingDuplexOptions> configure) =>
        await RedisStoreNode.StartAsync(await RedisServers.ConfigurationAsync(RedisKind.OneServer), RedisStoreNode.NewKeyPrefix(), configure);

    private static async Task<(string Id, string Token)> SubscribedAsync(RedisStoreNode node)
    {
        var session = await node.OpenAsync();
        Assert.That((await node.CommandAsync(session, 1, "{\"op\":\"subscribe\",\"topic\":\"news\"}")).Status, Is.EqualTo(DuplexReceiveStatus.Accepted));
        return session;
    }

    private static async Task PublishAsync(RedisStoreNode node, int count)
    {
        for (var i = 1; i <= count; i++)
        {
            await node.Store.PublishAsync("news", DuplexMessage.FromJson(new { topic = "news", data = i }), CancellationToken.None);
        }
    }

    private static async Task<DuplexSessionEndReason?> EndReasonAsync(RedisStoreNode node, (string Id, string Token) session)
    {
        var found = await node.Store.FindAsync(session.Id, session.Token, null, CancellationToken.None);
        return found.Status == DuplexLookupStatus.Found ? null : found.EndReason ?? throw new AssertionException($"session {session.Id}: {found.Status}");
    }

    private static string Describe(DuplexFrame frame) => frame.Message is { } message
        ? $"{frame.Sequence}:{message.Deserialize<System.Text.Json.JsonElement>().GetProperty("data").GetInt32()}"
        : $"{frame.Sequence}:gap {frame.Missed}";
}
