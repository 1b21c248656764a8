using System.Net;
using System.Net.Http.Headers;
using System.Text;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>The edge cases docs/polling-duplex-protocol.md specifies, each as the document states it.</summary>
public class ProtocolEdgeCaseTests
{
    private DuplexTestServer _server = null!;
    private HttpClient _http = null!;

    [OneTimeSetUp]
    public async Task StartServer()
    {
        _server = await DuplexTestServer.StartAsync(o =>
        {
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(100);
            o.InactivityTimeout = TimeSpan.FromMilliseconds(400);
            o.MaxPendingMessagesPerSession = 2;
        });
        _http = DuplexTestServer.CreateHttpClient();
    }

    [OneTimeTearDown]
    public async Task StopServer()
    {
        _http.Dispose();
        await _server.DisposeAsync();
    }

    [Test]
    public async Task AnAckLowerThanAnEarlierOne_IsIgnored_ThePollAnswersFromTheHighestAck()
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex);
        var onServer = _server.Recorder.Sessions[session.Id];
        onServer.Send(DuplexMessage.FromJson(1));
        onServer.Send(DuplexMessage.FromJson(2));
        using (var first = await session.PollAsync(0))
        {
            Assert.That(await first.Content.ReadAsStringAsync(), Does.Contain("\"seq\":2"));
        }

        using (var acked = await session.PollAsync(2))
        {
            Assert.That(acked.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        onServer.Send(DuplexMessage.FromJson(3));
        using var stale = await session.PollAsync(1);

        Assert.That(stale.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        Assert.That((await stale.Content.ReadAsStringAsync()).Trim(), Is.EqualTo("{\"seq\":3,\"type\":\"message\",\"data\":3}"));
    }

    [Test]
    public async Task DeleteOnAnExpiredSession_Is410SessionExpired()
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex);
        await Eventually.That(() => _server.Recorder.Ended.ContainsKey(session.Id), "the session expires");

        using var deleted = await session.CloseAsync();

        await RawSession.AssertProblemAsync(deleted, HttpStatusCode.Gone, "session-expired");
    }

    [Test]
    public async Task DeleteOnAFaultedSession_Is410SessionFaulted()
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex);
        var onServer = _server.Recorder.Sessions[session.Id];
        for (var i = 0; i < 3; i++)
        {
            onServer.Send(DuplexMessage.FromJson(i));
        }

        using var deleted = await session.CloseAsync();

        var problem = await RawSession.AssertProblemAsync(deleted, HttpStatusCode.Gone, "session-faulted");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("overflow"));
    }

    [TestCase("{\"seq\":1,\"seq\":2,\"data\":1}", "seq")]
    [TestCase("{\"seq\":1,\"data\":1,\"data\":2}", "data")]
    public async Task DuplicateMembersInATextFrame_Are400(string frame, string member)
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex);

        using var sent = await session.SendTextAsync(frame + "\n");

        var problem = await RawSession.AssertProblemAsync(sent, HttpStatusCode.BadRequest, "malformed-frame");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain($"\"{member}\" appears twice"));
    }

    [Test]
    public async Task ABinarySequenceNumberAbove2To63Minus1_Is400()
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex, "binary");
        var frame = FramingSafetyTests.Frame(1UL << 63, [1]);

        using var sent = await session.SendAsync(frame, "application/vnd.channelpool.duplex-frames");

        await RawSession.AssertProblemAsync(sent, HttpStatusCode.BadRequest, "malformed-frame");
    }

    [TestCase(true)]
    [TestCase(false)]
    public async Task AnOpenBodyOver4096Bytes_Is413_HoweverItIsFramed(bool chunked)
    {
        var json = "{\"encoding\":\"text\",\"padding\":\"" + new string('x', 4096) + "\"}";
        HttpContent content = chunked
            ? new StreamContent(new NonSeekableStream(Encoding.UTF8.GetBytes(json)))
            : new ByteArrayContent(Encoding.UTF8.GetBytes(json));
        content.Headers.ContentType = new MediaTypeHeaderValue("application/json");

        using var open = await _http.PostAsync(new Uri(_server.Duplex + "/sessions"), content);

        await RawSession.AssertProblemAsync(open, HttpStatusCode.RequestEntityTooLarge, "message-too-large");
    }

    [Test]
    public async Task AnOpenBodyThatIsNotUtf8_Is400()
    {
        var content = new ByteArrayContent([.. "{\"encoding\":\"te"u8, 0xFF, .. "xt\"}"u8]);
        content.Headers.ContentType = new MediaTypeHeaderValue("application/json");

        using var open = await _http.PostAsync(new Uri(_server.Duplex + "/sessions"), content);

        await RawSession.AssertProblemAsync(open, HttpStatusCode.BadRequest, "bad-request");
    }

    /// <summary>A body whose length HttpClient cannot know, so it is sent chunked.</summary>
    private sealed class NonSeekableStream(byte[] bytes) : MemoryStream(bytes)
    {
        public override bool CanSeek => false;
    }
}
