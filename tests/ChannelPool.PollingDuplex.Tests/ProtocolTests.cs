using System.Net;
using System.Text;
using System.Text.Json;
using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>The protocol as the document describes it, driven by plain HTTP requests with no ChannelPool client code.</summary>
public class ProtocolTests
{
    [Test]
    public async Task TextEncoding_CanBeDrivenWithPlainHttpFromTheDocumentAlone()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(300));
        using var http = DuplexTestServer.CreateHttpClient();

        // Open: 201 with id, token, encoding and limits.
        using var opened = await http.PostAsync(new Uri(server.PubSub + "/sessions"), RawSession.JsonContent("{\"encoding\":\"text\",\"mode\":\"multiple\"}"));
        Assert.That(opened.StatusCode, Is.EqualTo(HttpStatusCode.Created));
        Assert.That(opened.Headers.Location?.ToString(), Does.EndWith("/pubsub/sessions/" + JsonDocument.Parse(await opened.Content.ReadAsStringAsync()).RootElement.GetProperty("sessionId").GetString()));
        using var open = JsonDocument.Parse(await opened.Content.ReadAsStringAsync());
        Assert.That(open.RootElement.GetProperty("protocolVersion").GetInt32(), Is.EqualTo(1));
        Assert.That(open.RootElement.GetProperty("sessionId").GetString(), Has.Length.EqualTo(22), "128 bits, base64url");
        Assert.That(open.RootElement.GetProperty("token").GetString(), Has.Length.EqualTo(43), "256 bits, base64url");
        Assert.That(open.RootElement.GetProperty("serverPollTimeoutMs").GetInt64(), Is.EqualTo(300));
        var session = await RawSession.OpenAsync(http, server.PubSub);

        // Send two NDJSON frames: subscribe, then publish with echo so this session receives its own message.
        using (var sent = await session.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n{\"seq\":2,\"data\":{\"op\":\"publish\",\"topic\":\"t\",\"data\":\"hi\",\"echo\":true}}\n"))
        {
            Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK));
            Assert.That(await sent.Content.ReadAsStringAsync(), Is.EqualTo("{\"received\":2}"));
        }

        // Poll with ack=0: one NDJSON line with seq 1 and the published data.
        string firstPoll;
        using (var polled = await session.PollAsync(0))
        {
            Assert.That(polled.StatusCode, Is.EqualTo(HttpStatusCode.OK));
            Assert.That(polled.Content.Headers.ContentType?.MediaType, Is.EqualTo("application/x-ndjson"));
            firstPoll = await polled.Content.ReadAsStringAsync();
        }

        var line = JsonDocument.Parse(firstPoll.Split('\n', StringSplitOptions.RemoveEmptyEntries).Single()).RootElement;
        Assert.That(line.GetProperty("seq").GetInt64(), Is.EqualTo(1));
        Assert.That(line.GetProperty("type").GetString(), Is.EqualTo("message"));
        Assert.That(line.GetProperty("data").GetProperty("topic").GetString(), Is.EqualTo("t"));
        Assert.That(line.GetProperty("data").GetProperty("data").GetString(), Is.EqualTo("hi"));

        // Not acknowledged yet: the same frame comes again.
        using (var again = await session.PollAsync(0))
        {
            Assert.That(await again.Content.ReadAsStringAsync(), Is.EqualTo(firstPoll), "unacknowledged frames are sent again, identically");
        }

        // Acknowledged: nothing left, so the poll times out with 204.
        using (var empty = await session.PollAsync(1))
        {
            Assert.That(empty.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        // Resending the same frames (a lost response) delivers nothing twice.
        using (var resent = await session.SendTextAsync("{\"seq\":2,\"data\":{\"op\":\"publish\",\"topic\":\"t\",\"data\":\"hi\",\"echo\":true}}\n"))
        {
            Assert.That(await resent.Content.ReadAsStringAsync(), Is.EqualTo("{\"received\":2}"));
        }

        using (var stillEmpty = await session.PollAsync(1))
        {
            Assert.That(stillEmpty.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "the duplicate publish was not delivered again");
        }

        // Close; closing again answers the same; polling after close says the session was closed.
        using (var closed = await session.CloseAsync())
        {
            Assert.That(closed.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        using (var closedAgain = await session.CloseAsync())
        {
            Assert.That(closedAgain.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        using var afterClose = await session.PollAsync(1);
        await RawSession.AssertProblemAsync(afterClose, HttpStatusCode.Gone, "session-closed");
    }

    [Test]
    public async Task PollWithNothingToDeliver_IsAnsweredEmptyAfterTheServerPollTimeout()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(200));
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);

        var started = System.Diagnostics.Stopwatch.StartNew();
        using var response = await session.PollAsync(0);

        Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        Assert.That(started.Elapsed, Is.GreaterThanOrEqualTo(TimeSpan.FromMilliseconds(150)), "the server held the poll");
    }

    [Test]
    public async Task InactiveSession_Expires_AndTheClientSeesWhy()
    {
        await using var server = await DuplexTestServer.StartAsync(o =>
        {
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(100);
            o.InactivityTimeout = TimeSpan.FromMilliseconds(400);
        });
        FaultInjectingHandler? faults = null;
        using var http = DuplexTestServer.CreateHttpClient(wrap: inner => faults = new FaultInjectingHandler(inner, seed: 1));
        var client = new PollingDuplexClient(http, server.Duplex, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        await using var session = await client.OpenSessionAsync().Within();

        faults!.PausePolls();
        await Eventually.That(() => server.Recorder.Ended.ContainsKey(session.Id), "the server expired the silent session");
        faults.ResumePolls();

        var error = Assert.ThrowsAsync<PollingDuplexException>(async () =>
        {
            await foreach (var _ in session.ReadAllAsync(new CancellationTokenSource(Eventually.Limit).Token))
            {
            }
        });
        Assert.That(error!.Code, Is.EqualTo("session-expired"));
        Assert.That(error.StatusCode, Is.EqualTo(410));
        Assert.That(error.Message, Does.Contain("inactivity timeout"));
        Assert.That(session.State, Is.EqualTo(DuplexClientSessionState.Faulted));
        Assert.That(server.Recorder.Ended[session.Id], Is.EqualTo(DuplexSessionEndReason.Expired));
    }

    [Test]
    public async Task NewerPoll_SupersedesTheOutstandingOne()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.ServerPollTimeout = TimeSpan.FromSeconds(5));
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);

        var first = session.PollAsync(0);
        await Eventually.That(() => server.Recorder.Sessions[session.Id].HasOutstandingPoll, "the server holds the first poll");
        var second = session.PollAsync(0);

        using (var superseded = await first.Within())
        {
            await RawSession.AssertProblemAsync(superseded, HttpStatusCode.Conflict, "poll-superseded");
        }

        server.Recorder.Sessions[session.Id].Send(DuplexMessage.FromText("for the newer poll"));
        using var answered = await second.Within();
        Assert.That(answered.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        Assert.That(await answered.Content.ReadAsStringAsync(), Does.Contain("for the newer poll"));
    }

    [Test]
    public async Task MultipleModePoll_ThatWaitedLongerThanTheBatchWindow_IsAnsweredAtOnceWithAContentLength()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.BatchWindow = TimeSpan.FromMilliseconds(300));
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);
        var onServer = server.Recorder.Sessions[session.Id];
        var polling = session.PollAsync(0);
        await Task.Delay(400);
        Assert.That(onServer.Send(DuplexMessage.FromJson(1)), Is.EqualTo(DuplexSendResult.Queued));
        using var response = await polling;
        var body = await response.Content.ReadAsStringAsync();
        Assert.That(onServer.Send(DuplexMessage.FromJson(2)), Is.EqualTo(DuplexSendResult.Queued));

        Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        Assert.That(response.Headers.TransferEncodingChunked, Is.Not.True, "one write, its length known: no chunks");
        Assert.That(response.Content.Headers.ContentLength, Is.EqualTo(Encoding.UTF8.GetByteCount(body)));
        Assert.That(body, Is.EqualTo("{\"seq\":1,\"type\":\"message\",\"data\":1}\n"));
        using var next = await session.PollAsync(1);
        Assert.That(await next.Content.ReadAsStringAsync(), Does.StartWith("{\"seq\":2,"), "what came after went to the next poll");
    }

    [Test]
    public async Task MultipleModePoll_WhoseFirstFrameWasWaiting_StreamsWhatArrivesWithinTheBatchWindow()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.BatchWindow = TimeSpan.FromMilliseconds(500));
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);
        var onServer = server.Recorder.Sessions[session.Id];
        Assert.That(onServer.Send(DuplexMessage.FromJson(1)), Is.EqualTo(DuplexSendResult.Queued));
        var polling = session.PollAsync(0);
        await Task.Delay(100);
        Assert.That(onServer.Send(DuplexMessage.FromJson(2)), Is.EqualTo(DuplexSendResult.Queued));

        using var response = await polling;
        var seqs = (await response.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries)
            .Select(line => JsonDocument.Parse(line).RootElement.GetProperty("seq").GetInt64());
        Assert.That(seqs, Is.EqualTo(new long[] { 1, 2 }), "a session whose messages come close together keeps its response open for more");
        Assert.That(response.Headers.TransferEncodingChunked, Is.True, "streamed, so its length was not known");
    }

    [TestCase(DuplexEncoding.Text, 1L, 0L)]
    [TestCase(DuplexEncoding.Text, 1234567890123L, 0L)]
    [TestCase(DuplexEncoding.Text, 42L, 7L)]
    [TestCase(DuplexEncoding.Binary, 9L, 0L)]
    [TestCase(DuplexEncoding.Binary, 9L, 3L)]
    public void ServerFrameLength_IsWhatTheWriterWrites(DuplexEncoding encoding, long sequence, long missed)
    {
        var frame = missed == 0 ? DuplexFrame.ForMessage(sequence, DuplexMessage.FromJson(new { text = "héllo", n = 12 })) : DuplexFrame.ForGap(sequence, missed);
        var written = new System.Buffers.ArrayBufferWriter<byte>();
        if (missed == 0)
        {
            DuplexFrameWriter.WriteServerMessage(written, encoding, sequence, frame.Message!);
        }
        else
        {
            DuplexFrameWriter.WriteGap(written, encoding, sequence, missed);
        }

        Assert.That(DuplexFrameWriter.ServerFrameLength(encoding, frame), Is.EqualTo(written.WrittenCount));
    }

    [Test]
    public async Task MultipleModeResponse_CarriesAtMostTheLimit_SoUnacknowledgedFramesStayBounded()
    {
        await using var server = await DuplexTestServer.StartAsync(o =>
        {
            o.MaxPendingMessagesPerSession = 4;
            o.BatchWindow = TimeSpan.FromMilliseconds(50);
        });
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);
        var onServer = server.Recorder.Sessions[session.Id];
        async Task<long[]> PollAsync(long ack)
        {
            using var response = await session.PollAsync(ack);
            var body = await response.Content.ReadAsStringAsync();
            return [.. body.Split('\n', StringSplitOptions.RemoveEmptyEntries).Select(line => JsonDocument.Parse(line).RootElement.GetProperty("seq").GetInt64())];
        }

        for (var i = 1; i <= 4; i++)
        {
            Assert.That(onServer.Send(DuplexMessage.FromJson(i)), Is.EqualTo(DuplexSendResult.Queued));
        }

        Assert.That(await PollAsync(0), Is.EqualTo(new long[] { 1, 2, 3, 4 }));
        for (var i = 5; i <= 8; i++)
        {
            Assert.That(onServer.Send(DuplexMessage.FromJson(i)), Is.EqualTo(DuplexSendResult.Queued), "sent-but-unacknowledged frames do not count against the limit");
        }

        Assert.That(await PollAsync(0), Is.EqualTo(new long[] { 1, 2, 3, 4 }), "unacknowledged frames come first, and fill the response");
        Assert.That(await PollAsync(4), Is.EqualTo(new long[] { 5, 6, 7, 8 }));
        for (var i = 9; i <= 12; i++)
        {
            Assert.That(onServer.Send(DuplexMessage.FromJson(i)), Is.EqualTo(DuplexSendResult.Queued), "four messages waiting for a poll fit");
        }

        Assert.That(onServer.Send(DuplexMessage.FromJson(13)), Is.EqualTo(DuplexSendResult.SessionFaulted), "a fifth message waiting for a poll overflows");
    }

    [Test]
    public async Task GapPolicy_DropsWhatDoesNotFit_AndTheClientSeesTheGapInSequence()
    {
        await using var server = await DuplexTestServer.StartAsync(o =>
        {
            o.MaxPendingMessagesPerSession = 3;
            o.OverflowPolicy = DuplexOverflowPolicy.GapMarker;
        });
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.Duplex, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Binary, Mode = PollingDuplexMode.MultipleMessagesPerPoll });
        await using var session = await client.OpenSessionAsync().Within();
        var onServer = server.Recorder.Sessions[session.Id];

        // The client polls all along and may take a few between two sends on a busy machine (8 sends once all fit), so
        // send far more than one round trip can take: three places cannot hold 200 sends made in one go.
        const int Sent = 200;
        var results = Enumerable.Range(1, Sent).Select(i => onServer.Send(DeliveryTests.Message(DuplexEncoding.Binary, i))).ToList();
        var received = new List<DuplexDelivery>();
        using var timeout = new CancellationTokenSource(Eventually.Limit);
        await foreach (var delivery in session.ReadAllAsync(timeout.Token))
        {
            received.Add(delivery);
            if (received.Where(d => !d.IsGap).Sum(_ => 1) + received.Where(d => d.IsGap).Sum(d => d.Missed) >= Sent)
            {
                break;
            }
        }

        var dropped = results.Count(r => r == DuplexSendResult.Dropped);
        Assert.That(dropped, Is.GreaterThan(0), "the buffer overflowed");
        Assert.That(received.Select(d => d.Sequence), Is.EqualTo(Enumerable.Range(1, received.Count).Select(i => (long)i)), "gaps take their place in the sequence");
        Assert.That(received.Where(d => d.IsGap).Sum(d => d.Missed), Is.EqualTo(dropped), "every dropped message is accounted for");
        Assert.That(received.Where(d => !d.IsGap).Select(d => DeliveryTests.Value(DuplexEncoding.Binary, d.Message!)), Is.Ordered);
    }
}
