using System.Buffers.Binary;
using System.Net;
using System.Text;
using ChannelPool.PollingDuplex.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>
/// Every kind of bad request gets its status and problem code, and none of them disturbs the session it names (where
/// it has one) or any other session. The tests share one server, each on sessions of its own, which is itself a check
/// that bad requests leave the server serving.
/// </summary>
public class BadInputTests
{
    private DuplexTestServer _server = null!;
    private HttpClient _http = null!;

    [OneTimeSetUp]
    public async Task StartServer()
    {
        _server = await DuplexTestServer.StartAsync(o =>
        {
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(200);
            o.MaxMessageSize = 1024;
            o.MaxPendingBytesPerSession = 64 * 1024;
            o.MaxSendRequestSize = 8 * 1024;
        });
        _http = DuplexTestServer.CreateHttpClient();
    }

    [OneTimeTearDown]
    public async Task StopServer()
    {
        _http.Dispose();
        await _server.DisposeAsync();
    }

    private static IEnumerable<TestCaseData> MalformedTextFrames()
    {
        yield return new TestCaseData("not json at all\n", "not valid JSON").SetName("Text frame that is not JSON");
        yield return new TestCaseData("[1,2]\n", "JSON object").SetName("Text frame that is an array");
        yield return new TestCaseData("{\"data\":1}\n", "needs a \"seq\"").SetName("Text frame without seq");
        yield return new TestCaseData("{\"seq\":\"one\",\"data\":1}\n", "\"seq\" must be an integer").SetName("Text frame with a string seq");
        yield return new TestCaseData("{\"seq\":0,\"data\":1}\n", "below 1").SetName("Text frame with seq 0");
        yield return new TestCaseData("{\"seq\":1}\n", "needs \"data\"").SetName("Text frame without data");
        yield return new TestCaseData("{\"seq\":1,\"data\":{\"a\":1}\n", "not valid JSON").SetName("Text frame cut short");
        yield return new TestCaseData("{\"seq\":1,\"type\":\"gap\",\"missed\":2}\n", "unknown frame type").SetName("Text gap frame from a client");
    }

    [TestCaseSource(nameof(MalformedTextFrames))]
    public async Task MalformedTextFrame_Is400_DeliversNothing_AndTheSessionGoesOn(string body, string reason)
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex);

        using var bad = await session.SendTextAsync("{\"seq\":1,\"data\":\"fine\"}\n" + body);
        var problem = await RawSession.AssertProblemAsync(bad, HttpStatusCode.BadRequest, "malformed-frame");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain(reason));
        Assert.That(_server.Recorder.Received[session.Id], Is.Empty, "nothing in a malformed request is delivered");

        using var good = await session.SendTextAsync("{\"seq\":1,\"data\":\"fine\"}\n");
        Assert.That(good.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        Assert.That(_server.Recorder.Received[session.Id], Has.Count.EqualTo(1));
    }

    private static IEnumerable<TestCaseData> MalformedBinaryFrames()
    {
        yield return new TestCaseData(Frame(kind: 7, seq: 1, payload: [1]), "unknown frame kind").SetName("Binary frame of unknown kind");
        yield return new TestCaseData(Frame(kind: 2, seq: 1, payload: new byte[8]), "unknown frame kind").SetName("Binary gap frame from a client");
        yield return new TestCaseData(Frame(kind: 1, seq: 0, payload: [1]), "outside 1").SetName("Binary frame with seq 0");
        yield return new TestCaseData(Frame(kind: 1, seq: 1, payload: [1, 2, 3])[..8], "header was cut short").SetName("Binary frame with a truncated header");
        yield return new TestCaseData(Frame(kind: 1, seq: 1, payload: [1, 2, 3, 4, 5])[..15], "payload was cut short").SetName("Binary frame with a truncated payload");
    }

    [TestCaseSource(nameof(MalformedBinaryFrames))]
    public async Task MalformedBinaryFrame_Is400_AndDeliversNothing(byte[] body, string reason)
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex, encoding: "binary");

        using var bad = await session.SendAsync(body, "application/vnd.channelpool.duplex-frames");

        var problem = await RawSession.AssertProblemAsync(bad, HttpStatusCode.BadRequest, "malformed-frame");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain(reason));
        Assert.That(_server.Recorder.Received[session.Id], Is.Empty);
    }

    [Test]
    public async Task OversizedMessage_Is413_InEitherEncoding()
    {
        var text = await RawSession.OpenAsync(_http, _server.Duplex);
        var binary = await RawSession.OpenAsync(_http, _server.Duplex, encoding: "binary");

        using var bigText = await text.SendTextAsync($"{{\"seq\":1,\"data\":\"{new string('x', 2000)}\"}}\n");
        using var bigBinary = await binary.SendAsync(Frame(1, 1, new byte[2000]), "application/vnd.channelpool.duplex-frames");
        using var hugeRequest = await text.SendTextAsync(string.Concat(Enumerable.Range(1, 100).Select(i => $"{{\"seq\":{i},\"data\":\"{new string('y', 500)}\"}}\n")));

        await RawSession.AssertProblemAsync(bigText, HttpStatusCode.RequestEntityTooLarge, "message-too-large");
        await RawSession.AssertProblemAsync(bigBinary, HttpStatusCode.RequestEntityTooLarge, "message-too-large");
        await RawSession.AssertProblemAsync(hugeRequest, HttpStatusCode.RequestEntityTooLarge, "message-too-large");
    }

    [Test]
    public async Task WrongContentType_Is415()
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex, encoding: "binary");

        using var response = await session.SendTextAsync("{\"seq\":1,\"data\":1}\n");

        var problem = await RawSession.AssertProblemAsync(response, HttpStatusCode.UnsupportedMediaType, "unsupported-media-type");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("application/vnd.channelpool.duplex-frames"));
    }

    [Test]
    public async Task UnknownOrForgedSessionId_Is404_ForEveryRequest()
    {
        var real = await RawSession.OpenAsync(_http, _server.Duplex);
        var forged = new RawSessionProbe(_http, _server.Duplex, "AAAAAAAAAAAAAAAAAAAAAA", real.Token);

        await RawSession.AssertProblemAsync(await forged.PollAsync(), HttpStatusCode.NotFound, "unknown-session");
        await RawSession.AssertProblemAsync(await forged.SendAsync(), HttpStatusCode.NotFound, "unknown-session");
        await RawSession.AssertProblemAsync(await forged.CloseAsync(), HttpStatusCode.NotFound, "unknown-session");
        await RawSession.AssertProblemAsync(await new RawSessionProbe(_http, _server.Duplex, "not-a-session-id", real.Token).PollAsync(), HttpStatusCode.NotFound, "unknown-session");
    }

    [Test]
    public async Task MissingToken_Is401_AndAnotherClientsToken_Is403_WithoutHarmingTheSession()
    {
        var victim = await RawSession.OpenAsync(_http, _server.Duplex);
        var intruder = await RawSession.OpenAsync(_http, _server.Duplex);

        using var noToken = await victim.SendRawAsync(HttpMethod.Get, $"/sessions/{victim.Id}/poll?ack=0", token: string.Empty);
        await RawSession.AssertProblemAsync(noToken, HttpStatusCode.Unauthorized, "missing-token");
        Assert.That(noToken.Headers.WwwAuthenticate.ToString(), Is.EqualTo(DuplexWire.SessionTokenHeader), "the session token's own challenge, not the application's Bearer");

        using var stolenPoll = await victim.SendRawAsync(HttpMethod.Get, $"/sessions/{victim.Id}/poll?ack=0", token: intruder.Token);
        await RawSession.AssertProblemAsync(stolenPoll, HttpStatusCode.Forbidden, "invalid-token");
        using var stolenSend = await victim.SendRawAsync(HttpMethod.Post, $"/sessions/{victim.Id}/messages", new StringContent("{\"seq\":1,\"data\":1}\n", Encoding.UTF8, "application/x-ndjson"), token: intruder.Token);
        await RawSession.AssertProblemAsync(stolenSend, HttpStatusCode.Forbidden, "invalid-token");
        using var stolenClose = await victim.SendRawAsync(HttpMethod.Delete, $"/sessions/{victim.Id}", token: intruder.Token);
        await RawSession.AssertProblemAsync(stolenClose, HttpStatusCode.Forbidden, "invalid-token");
        using var forgedToken = await victim.SendRawAsync(HttpMethod.Get, $"/sessions/{victim.Id}/poll?ack=0", token: "forged-token");
        await RawSession.AssertProblemAsync(forgedToken, HttpStatusCode.Forbidden, "invalid-token");

        Assert.That(_server.Recorder.Received[victim.Id], Is.Empty, "the intruder's message was not delivered");
        _server.Recorder.Sessions[victim.Id].Send(DuplexMessage.FromText("still mine"));
        using var poll = await victim.PollAsync(0);
        Assert.That(await poll.Content.ReadAsStringAsync(), Does.Contain("still mine"));
    }

    [Test]
    public async Task EndedSessions_Are410_WithTheReason()
    {
        await using var server = await DuplexTestServer.StartAsync(o =>
        {
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(100);
            o.InactivityTimeout = TimeSpan.FromMilliseconds(300);
        });
        using var http = DuplexTestServer.CreateHttpClient();
        var expired = await RawSession.OpenAsync(http, server.Duplex);
        var closedByServer = await RawSession.OpenAsync(http, server.Duplex);
        server.Recorder.Sessions[closedByServer.Id].Close();

        await Eventually.That(() => server.Recorder.Ended.ContainsKey(expired.Id), "the silent session expired");

        var problem = await RawSession.AssertProblemAsync(await expired.PollAsync(0), HttpStatusCode.Gone, "session-expired");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("inactivity timeout"));
        await RawSession.AssertProblemAsync(await expired.SendTextAsync("{\"seq\":1,\"data\":1}\n"), HttpStatusCode.Gone, "session-expired");
        await RawSession.AssertProblemAsync(await closedByServer.PollAsync(0), HttpStatusCode.Gone, "session-faulted");
    }

    [Test]
    public async Task BadAck_Is400()
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex);

        await RawSession.AssertProblemAsync(await session.PollAsync("lots"), HttpStatusCode.BadRequest, "bad-ack");
        await RawSession.AssertProblemAsync(await session.PollAsync("-1"), HttpStatusCode.BadRequest, "bad-ack");
        await RawSession.AssertProblemAsync(await session.SendRawAsync(HttpMethod.Get, $"/sessions/{session.Id}/poll"), HttpStatusCode.BadRequest, "bad-ack");
        var beyond = await RawSession.AssertProblemAsync(await session.PollAsync(5), HttpStatusCode.BadRequest, "bad-ack");
        Assert.That(beyond.GetProperty("detail").GetString(), Does.Contain("beyond the highest sequence number sent"));
    }

    [Test]
    public async Task SendThatSkipsASequenceNumber_Is409_AndTellsHowFarTheServerGot()
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex);
        using (var first = await session.SendTextAsync("{\"seq\":1,\"data\":1}\n"))
        {
            Assert.That(first.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        using var skipped = await session.SendTextAsync("{\"seq\":3,\"data\":3}\n");

        var problem = await RawSession.AssertProblemAsync(skipped, HttpStatusCode.Conflict, "out-of-order");
        Assert.That(problem.GetProperty("received").GetInt64(), Is.EqualTo(1));
        Assert.That(_server.Recorder.Received[session.Id], Has.Count.EqualTo(1));
    }

    [Test]
    public async Task RejectedMessage_Is422_CountsAsReceived_AndIsNotSentAgain()
    {
        var session = await RawSession.OpenAsync(_http, _server.Duplex);

        using var rejected = await session.SendTextAsync("{\"seq\":1,\"data\":\"ok\"}\n{\"seq\":2,\"data\":\"reject me\"}\n{\"seq\":3,\"data\":\"not reached\"}\n");

        var problem = await RawSession.AssertProblemAsync(rejected, (HttpStatusCode)422, "message-rejected");
        Assert.That(problem.GetProperty("received").GetInt64(), Is.EqualTo(2));
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("asked to be rejected"));
        using var next = await session.SendTextAsync("{\"seq\":3,\"data\":\"third\"}\n");
        Assert.That(next.StatusCode, Is.EqualTo(HttpStatusCode.OK));
    }

    [Test]
    public async Task BadOpenRequest_Is400()
    {
        using var notJson = await _http.PostAsync(new Uri(_server.Duplex + "/sessions"), RawSession.JsonContent("{encoding:"));
        using var badEncoding = await _http.PostAsync(new Uri(_server.Duplex + "/sessions"), RawSession.JsonContent("{\"encoding\":\"morse\"}"));
        using var badMode = await _http.PostAsync(new Uri(_server.Duplex + "/sessions"), RawSession.JsonContent("{\"mode\":\"some\"}"));

        await RawSession.AssertProblemAsync(notJson, HttpStatusCode.BadRequest, "bad-request");
        var encoding = await RawSession.AssertProblemAsync(badEncoding, HttpStatusCode.BadRequest, "bad-request");
        Assert.That(encoding.GetProperty("detail").GetString(), Does.Contain("\"morse\""));
        await RawSession.AssertProblemAsync(badMode, HttpStatusCode.BadRequest, "bad-request");
    }

    [Test]
    public async Task TooManySessions_Is503WithRetryAfter_WhileAFullPendingLimit_EvictsTheOldestThatNeverPolled()
    {
        await using var server = await DuplexTestServer.StartAsync(o =>
        {
            o.MaxConcurrentSessions = 3;
            o.MaxPendingSessions = 2;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(50);
        });
        using var http = DuplexTestServer.CreateHttpClient();
        var first = await RawSession.OpenAsync(http, server.Duplex);
        var second = await RawSession.OpenAsync(http, server.Duplex);

        // The pending limit makes room: the oldest session that never polled goes, not the newcomer.
        var third = await RawSession.OpenAsync(http, server.Duplex);
        await RawSession.AssertProblemAsync(await first.PollAsync(0), HttpStatusCode.Gone, "session-evicted");

        // Sessions that polled are no longer pending, and never evicted; the session limit still refuses.
        using (await second.PollAsync(0))
        using (await third.PollAsync(0))
        {
        }

        await RawSession.OpenAsync(http, server.Duplex);
        using var full = await http.PostAsync(new Uri(server.Duplex + "/sessions"), RawSession.JsonContent("{}"));
        await RawSession.AssertProblemAsync(full, HttpStatusCode.ServiceUnavailable, "too-many-sessions");
        Assert.That(full.Headers.RetryAfter?.Delta, Is.Not.Null);
    }

    [Test]
    public async Task StalledReader_OverflowsAndFaults_WhileOtherSessionsGetEverything()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.MaxPendingMessagesPerSession = 8);
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.PubSub, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        var stalled = await RawSession.OpenAsync(http, server.PubSub);
        using (var subscribed = await stalled.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"news\"}}\n"))
        {
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        var readers = new List<DuplexClientSession>();
        for (var i = 0; i < 5; i++)
        {
            var reader = await client.OpenSessionAsync();
            await reader.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "news" }));
            readers.Add(reader);
        }

        // Readers keep up by construction: waves of 3, each waited for, never exceed their 8 places. The stalled
        // session never polls, so it overflows at the ninth message; if it could hold the others up, this would hang.
        var reading = readers.Select(r => DeliveryTests.ReadAsync(r, 50)).ToList();
        for (var i = 1; i <= 50; i++)
        {
            server.PubSubService.Publish("news", Encoding.UTF8.GetBytes(i.ToString(System.Globalization.CultureInfo.InvariantCulture)));
            if (i % 3 == 0 || i == 50)
            {
                var wave = i;
                await Eventually.That(() => readers.All(r => r.LastReceivedSequence >= wave), () => $"every reader has message {wave} (now {string.Join(", ", readers.Select(r => $"{r.LastReceivedSequence}/{r.State}/{r.Fault?.Message}"))})");
            }
        }

        var results = await Task.WhenAll(reading).Within();
        Assert.That(results, Has.All.Count.EqualTo(50), "every reading session got every message");
        var problem = await RawSession.AssertProblemAsync(await stalled.PollAsync(0), HttpStatusCode.Gone, "session-faulted");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("overflow"));
        foreach (var reader in readers)
        {
            await reader.DisposeAsync();
        }
    }

    [Test]
    public void InvalidOptions_StopTheEndpointFromBeingMapped_NamingEachRule()
    {
        var app = WebApplication.CreateSlimBuilder().Build();

        var error = Assert.Throws<OptionsValidationException>(() => app.MapPollingDuplex<RecordingHandler>("/bad", o =>
        {
            o.ServerPollTimeout = TimeSpan.FromMinutes(20);
            o.MaxPendingMessagesPerSession = 0;
            o.MaxPendingBytesPerSession = 10;
            o.FirstPollTimeout = TimeSpan.Zero;
            o.MaxEndedSessionRecords = -1;
            o.UserIdSelector = null!;
            o.AwayGracePeriod = TimeSpan.Zero;
        }));

        Assert.That(error!.Message, Does.Contain("Polling duplex endpoint '/bad': The field PollingDuplexOptions.ServerPollTimeout must be between 00:00:00.0100000 and 00:10:00; it was 00:20:00."));
        Assert.That(error.Message, Does.Contain("The field PollingDuplexOptions.MaxPendingMessagesPerSession must be between 1 and 2147483647; it was 0."));
        Assert.That(error.Message, Does.Contain("MaxPendingBytesPerSession must be at least MaxMessageSize plus 64 (65600)"));
        Assert.That(error.Message, Does.Contain("The field PollingDuplexOptions.FirstPollTimeout must be between 00:00:00.0100000 and 1.00:00:00; it was 00:00:00."));
        Assert.That(error.Message, Does.Contain("The field PollingDuplexOptions.MaxEndedSessionRecords must be between 0 and 2147483647; it was -1."));
        Assert.That(error.Message, Does.Contain("Polling duplex endpoint '/bad': UserIdSelector must turn a request's user into an id"));
        Assert.That(error.Message, Does.Contain("Polling duplex endpoint '/bad': AwayGracePeriod must be above zero (a page that reloads needs the time to come back); it was 00:00:00."));
    }

    [Test]
    public void InvalidOptions_OutOfTheirDeclaredRange_AreEachNamedWithTheirValue()
    {
        var app = WebApplication.CreateSlimBuilder().Build();

        var error = Assert.Throws<OptionsValidationException>(() => app.MapPollingDuplex<RecordingHandler>("/range", o =>
        {
            o.InactivityTimeout = TimeSpan.FromDays(2);
            o.MaxMessageSize = 0;
            o.MaxConcurrentSessions = -5;
            o.OverflowPolicy = (DuplexOverflowPolicy)42;
        }));

        Assert.That(error!.Failures, Has.Some.EqualTo("Polling duplex endpoint '/range': The field PollingDuplexOptions.InactivityTimeout must be between 00:00:00 and 1.00:00:00; it was 2.00:00:00."));
        Assert.That(error.Failures, Has.Some.EqualTo("Polling duplex endpoint '/range': The field PollingDuplexOptions.MaxMessageSize must be between 1 and 16777216; it was 0."));
        Assert.That(error.Failures, Has.Some.EqualTo("Polling duplex endpoint '/range': The field PollingDuplexOptions.MaxConcurrentSessions must be between 1 and 2147483647; it was -5."));
        Assert.That(error.Failures, Has.Some.EqualTo("Polling duplex endpoint '/range': The field PollingDuplexOptions.OverflowPolicy must be FaultSession or GapMarker; it was 42."));
    }

    [Test]
    public void AStoreMadeForOtherOptionsOrAnotherEndpoint_StopsTheEndpointFromBeingMapped()
    {
        var app = WebApplication.CreateSlimBuilder().Build();
        using var otherOptions = new InMemorySessionStore("/store", new PollingDuplexOptions(), new RecordingHandler(), TimeProvider.System, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);

        var wrongOptions = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplexOnStore("/store", _ => otherOptions));
        var wrongEndpoint = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplexOnStore(
            "/elsewhere", options => new InMemorySessionStore("/store", options, new RecordingHandler(), TimeProvider.System, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance)));

        Assert.That(wrongOptions!.Message, Does.Contain("MapPollingDuplexOnStore(\"/store\"): the store must be made for this endpoint, with the options it was given"));
        Assert.That(wrongEndpoint!.Message, Does.Contain("MapPollingDuplexOnStore(\"/elsewhere\")"));
    }

    private static byte[] Frame(byte kind, ulong seq, byte[] payload)
    {
        var frame = new byte[13 + payload.Length];
        frame[0] = kind;
        BinaryPrimitives.WriteUInt64BigEndian(frame.AsSpan(1), seq);
        BinaryPrimitives.WriteUInt32BigEndian(frame.AsSpan(9), (uint)payload.Length);
        payload.CopyTo(frame, 13);
        return frame;
    }

    /// <summary>Requests against a session id that may not exist.</summary>
    private sealed class RawSessionProbe(HttpClient http, Uri endpoint, string id, string token)
    {
        public Task<HttpResponseMessage> PollAsync() => Send(HttpMethod.Get, $"/sessions/{id}/poll?ack=0");

        public Task<HttpResponseMessage> SendAsync() => Send(HttpMethod.Post, $"/sessions/{id}/messages", new StringContent("{\"seq\":1,\"data\":1}\n", Encoding.UTF8, "application/x-ndjson"));

        public Task<HttpResponseMessage> CloseAsync() => Send(HttpMethod.Delete, $"/sessions/{id}");

        private async Task<HttpResponseMessage> Send(HttpMethod method, string path, HttpContent? content = null)
        {
            using var request = new HttpRequestMessage(method, new Uri(endpoint + path)) { Content = content };
            request.Headers.Add(DuplexWire.SessionTokenHeader, token);
            return await http.SendAsync(request);
        }
    }
}
