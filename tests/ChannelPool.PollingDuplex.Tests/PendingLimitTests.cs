using System.Net;
using Microsoft.Extensions.Logging.Abstractions;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>MaxPendingMessagesPerSession counts what a client is really behind by, not a batch on its way to a poll it holds.</summary>
public class PendingLimitTests
{
    [Test]
    public async Task ABurstLargerThanTheLimit_DoesNotFaultASessionWithAPollOutstanding()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.MaxPendingMessagesPerSession = 8);
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);
        var onServer = server.Recorder.Sessions[session.Id];
        var firstPoll = session.PollAsync(0);
        await Eventually.That(() => onServer.HasOutstandingPoll, "the poll is outstanding");

        var results = Enumerable.Range(1, 20).Select(i => onServer.Send(DuplexMessage.FromJson(i))).ToList();

        Assert.That(results, Is.All.EqualTo(DuplexSendResult.Queued));
        var received = new List<string>();
        using (var response = await firstPoll.Within())
        {
            received.AddRange((await response.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries));
        }

        while (received.Count < 20)
        {
            using var response = await session.PollAsync(received.Count).Within();
            Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.OK), await response.Content.ReadAsStringAsync());
            received.AddRange((await response.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries));
        }

        Assert.That(received, Has.Count.EqualTo(20));
        Assert.That(onServer.EndReason, Is.Null);
    }

    [Test]
    public void TheDefault_LetsABurstOfNinePassASessionBetweenPolls()
    {
        using var server = new InMemorySessionStore("/d", new PollingDuplexOptions(), new RecordingHandler(), TimeProvider.System, NullLogger.Instance);
        Assert.That(server.TryReserve(), Is.Null);
        var (session, _) = server.Create(DuplexEncoding.Text, PollingDuplexMode.MultipleMessagesPerPoll);

        var results = Enumerable.Range(1, 9).Select(i => session.Send(DuplexMessage.FromJson(i))).ToList();

        Assert.That(results, Is.All.EqualTo(DuplexSendResult.Queued));
    }

    [Test]
    public void ASessionThatStopsPolling_IsStillBounded_ByCount()
    {
        using var server = new InMemorySessionStore("/d", new PollingDuplexOptions { MaxPendingMessagesPerSession = 8 }, new RecordingHandler(), TimeProvider.System, NullLogger.Instance);
        Assert.That(server.TryReserve(), Is.Null);
        var (session, _) = server.Create(DuplexEncoding.Text, PollingDuplexMode.MultipleMessagesPerPoll);
        var ticket = session.BeginPoll(0, out _, out _)!;
        session.EndPoll(ticket);

        var results = Enumerable.Range(1, 9).Select(i => session.Send(DuplexMessage.FromJson(i))).ToList();

        Assert.That(results[..8], Is.All.EqualTo(DuplexSendResult.Queued));
        Assert.That(results[8], Is.EqualTo(DuplexSendResult.SessionFaulted));
        Assert.That(session.EndReason, Is.EqualTo(DuplexSessionEndReason.Overflow));
    }

    [Test]
    public void ASessionWhosePollStopsReading_IsStillBounded_ByBytes_EvenForTinyMessages()
    {
        var options = new PollingDuplexOptions { MaxPendingBytesPerSession = 64 * 1024, MaxMessageSize = 1024, MaxSendRequestSize = 2048 };
        using var server = new InMemorySessionStore("/d", options, new RecordingHandler(), TimeProvider.System, NullLogger.Instance);
        Assert.That(server.TryReserve(), Is.Null);
        var (session, _) = server.Create(DuplexEncoding.Binary, PollingDuplexMode.MultipleMessagesPerPoll);
        session.BeginPoll(0, out _, out _);

        var tiny = DuplexMessage.FromBytes(new byte[1]);
        var queued = 0;
        while (queued < 1_000_000 && session.Send(tiny) == DuplexSendResult.Queued)
        {
            queued++;
        }

        Assert.That(session.EndReason, Is.EqualTo(DuplexSessionEndReason.Overflow));
        Assert.That(queued, Is.LessThan(64 * 1024 / 16), "each held frame counts its bookkeeping, not only its payload");
    }
}
