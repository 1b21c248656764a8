using Microsoft.Extensions.Time.Testing;
using ChannelPool.PollingDuplex.PubSub;
using Microsoft.Extensions.Logging.Abstractions;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>
/// What anyone who can reach the endpoint can make the server hold. Opening needs no credentials and hands out a token,
/// so every request here is one an anonymous client can make.
/// </summary>
public class AnonymousLoadTests
{
    [Test]
    public void ASessionThatNeverPolls_StopsCountingAsPending_AfterTheFirstPollDeadline_NotTheInactivityTimeout()
    {
        var time = new FakeTimeProvider();
        using var server = new InMemorySessionStore("/d", new PollingDuplexOptions { MaxPendingSessions = 2 }, new RecordingHandler(), time, NullLogger.Instance);
        var sessions = Enumerable.Range(0, 2).Select(_ => Open(server)).ToList();
        Assert.That(server.PendingCount, Is.EqualTo(2));

        time.Advance(TimeSpan.FromMinutes(1));

        Assert.That(sessions.Select(s => s.EndReason), Is.All.EqualTo(DuplexSessionEndReason.Expired), "a minute is far below the 10-minute inactivity timeout");
        Assert.That(server.PendingCount, Is.Zero);
        Assert.That(server.SessionCount, Is.Zero);
    }

    [Test]
    public async Task ATopicWithNoSubscribers_GoesAway()
    {
        var pubSub = new PubSubHandler();
        using var server = new InMemorySessionStore("/p", new PollingDuplexOptions(), pubSub, TimeProvider.System, NullLogger.Instance);
        Assert.That(server.TryReserve(), Is.Null);
        var (session, _) = server.Create(DuplexEncoding.Text, PollingDuplexMode.MultipleMessagesPerPoll);
        for (var i = 0; i < 100; i++)
        {
            await pubSub.OnMessageAsync(session, DuplexMessage.FromJson(new { op = "subscribe", topic = $"t{i}" }), CancellationToken.None);
        }

        await pubSub.OnMessageAsync(session, DuplexMessage.FromJson(new { op = "unsubscribe", topic = "t0" }), CancellationToken.None);
        Assert.That(TopicCount(pubSub), Is.EqualTo(99));

        session.Close();

        await Eventually.That(() => TopicCount(pubSub) == 0, () => $"every topic is gone; {TopicCount(pubSub)} remain");
        await pubSub.OnMessageAsync(Open(server), DuplexMessage.FromJson(new { op = "subscribe", topic = "t5" }), CancellationToken.None);
        Assert.That(pubSub.SubscriberCount("t5"), Is.EqualTo(1), "a topic that went away can come back");
    }

    [Test]
    public void EndedSessionRecords_AreBoundedInCount()
    {
        using var server = new InMemorySessionStore("/d", new PollingDuplexOptions(), new RecordingHandler(), TimeProvider.System, NullLogger.Instance);
        for (var i = 0; i < 30_000; i++)
        {
            Open(server).Close();
        }

        Assert.That(EndedRecordCount(server), Is.LessThanOrEqualTo(10_000));
    }

    /// <summary>
    /// A fixed budget of anonymous requests: sessions that open and never poll, that subscribe to a topic of their own and
    /// close, that publish to topics nobody reads. Twice the budget must hold no more than the budget did, and both stay
    /// under a ceiling. Measured on this code at the default limits: 2.8 MB retained, for about 940 sessions waiting for
    /// their first-poll deadline and 10,000 ended-session records, the same after 15,000 and 30,000 requests.
    /// </summary>
    [Test]
    public async Task MemoryStaysBounded_UnderAFixedBudgetOfAnonymousRequests()
    {
        const int Budget = 15_000;

        // The measured 2.8 MB with room for runtime noise.
        const long CeilingBytes = 4 * 1024 * 1024;
        var time = new FakeTimeProvider();
        var pubSub = new PubSubHandler();
        using var server = new InMemorySessionStore("/p", new PollingDuplexOptions(), pubSub, time, NullLogger.Instance);
        var next = 0;
        async Task SpendAsync(int budget)
        {
            for (var i = 0; i < budget; i++, next++)
            {
                time.Advance(TimeSpan.FromMilliseconds(5));
                if (server.TryReserve() is not null)
                {
                    continue;
                }

                var (session, _) = server.Create(DuplexEncoding.Text, PollingDuplexMode.MultipleMessagesPerPoll);
                await pubSub.OnSessionOpenedAsync(session, CancellationToken.None);
                switch (next % 3)
                {
                    case 0:
                        break; // opens and never polls
                    case 1:
                        await pubSub.OnMessageAsync(session, DuplexMessage.FromJson(new { op = "subscribe", topic = $"topic-{next}" }), CancellationToken.None);
                        session.Close();
                        break;
                    default:
                        await pubSub.OnMessageAsync(session, DuplexMessage.FromJson(new { op = "publish", topic = $"topic-{next}", data = next }), CancellationToken.None);
                        session.Close();
                        break;
                }
            }

            await Eventually.That(() => TopicCount(pubSub) == 0, () => $"closed sessions' topics are gone; {TopicCount(pubSub)} remain");
        }

        // A warm-up first, so the baseline already holds what is loaded and compiled once.
        await SpendAsync(2_000);
        var baseline = GC.GetTotalMemory(forceFullCollection: true);
        await SpendAsync(Budget);
        var afterOne = GC.GetTotalMemory(forceFullCollection: true) - baseline;
        var heldAfterOne = (server.SessionCount, EndedRecordCount(server));
        await SpendAsync(Budget);
        var afterTwo = GC.GetTotalMemory(forceFullCollection: true) - baseline;

        TestContext.Out.WriteLine($"retained after {Budget} requests: {afterOne:N0} bytes, {heldAfterOne}; after {2 * Budget}: {afterTwo:N0} bytes, {(server.SessionCount, EndedRecordCount(server))}");
        Assert.That(server.SessionCount, Is.LessThanOrEqualTo(new PollingDuplexOptions().MaxPendingSessions), "sessions that never poll expire at the first-poll deadline");
        Assert.That(EndedRecordCount(server), Is.LessThanOrEqualTo(new PollingDuplexOptions().MaxEndedSessionRecords));
        Assert.That(afterTwo, Is.LessThan(afterOne + (512 * 1024)), "the second budget added nothing that stays");
        Assert.That(afterTwo, Is.LessThan(CeilingBytes));
        GC.KeepAlive(server);
    }

    private static DuplexSession Open(InMemorySessionStore server)
    {
        Assert.That(server.TryReserve(), Is.Null);
        return server.Create(DuplexEncoding.Text, PollingDuplexMode.MultipleMessagesPerPoll).Session;
    }

    private static int TopicCount(PubSubHandler handler) => handler.TopicCount;

    private static int EndedRecordCount(InMemorySessionStore server) => server.EndedSessionRecordCount;
}
