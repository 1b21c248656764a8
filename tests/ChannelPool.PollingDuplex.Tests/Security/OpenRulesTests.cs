using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// The open's rules, the same on both stores: it must be JSON (so a cross-site form cannot send it), its <c>openId</c>
/// makes a retried open return the first one's session rather than a second, and a session whose page went away ends
/// after the grace period unless a request comes back.
/// </summary>
[TestFixture(DuplexStore.InMemory)]
[TestFixture(DuplexStore.Redis)]
public class OpenRulesTests(DuplexStore store)
{
    private static readonly TimeSpan Grace = TimeSpan.FromSeconds(1);

    private SecureDuplexServer _server = null!;

    [OneTimeSetUp]
    public async Task StartAsync() => _server = await SecureDuplexServer.StartAsync(store, o =>
    {
        o.Topics.AllowAnonymous = true;
        o.ServerPollTimeout = TimeSpan.FromMilliseconds(300);

        // The sweep runs every quarter of the first-poll timeout: a short one makes it look often.
        o.FirstPollTimeout = TimeSpan.FromMilliseconds(400);
        o.AwayGracePeriod = Grace;
    });

    [OneTimeTearDown]
    public async Task StopAsync() => await _server.DisposeAsync();

    [TestCase(null, TestName = "{m}(no content type)")]
    [TestCase("text/plain")]
    [TestCase("application/x-www-form-urlencoded")]
    [TestCase("multipart/form-data; boundary=x")]
    [TestCase("application/jsonp")]
    public async Task AnOpenThatIsNotJson_Is415OpenContentType_AndSaysWhatToSend(string? contentType)
    {
        using var http = SecureDuplexServer.ClientFor("alice");
        var content = new ByteArrayContent("{}"u8.ToArray());
        content.Headers.ContentType = contentType is null ? null : MediaTypeHeaderValue.Parse(contentType);

        using var open = await http.PostAsync(new Uri(_server.Address + "/sessions"), content);

        var problem = await RawSession.AssertProblemAsync(open, HttpStatusCode.UnsupportedMediaType, "open-content-type");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("application/json"));
    }

    [Test]
    public async Task AnOpenWithJsonAndACharset_Opens()
    {
        using var http = SecureDuplexServer.ClientFor("alice");
        using var open = await http.PostAsync(new Uri(_server.Address + "/sessions"), new StringContent("{}", Encoding.UTF8, "application/json"));
        Assert.That(open.StatusCode, Is.EqualTo(HttpStatusCode.Created), await open.Content.ReadAsStringAsync());
    }

    [TestCase("\"short\"")]
    [TestCase("\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\"", TestName = "{m}(65 characters)")]
    [TestCase("\"has a space in it, 0123456789\"")]
    [TestCase("\"brace{0123456789abcdef}\"")]
    [TestCase("12345678901234567890")]
    [TestCase("null")]
    public async Task AMalformedOpenId_Is400NamingTheField(string openId)
    {
        using var http = SecureDuplexServer.ClientFor("alice");
        using var open = await http.PostAsync(new Uri(_server.Address + "/sessions"), RawSession.JsonContent($"{{\"openId\":{openId}}}"));

        var problem = await RawSession.AssertProblemAsync(open, HttpStatusCode.BadRequest, "bad-request");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("openId").And.Contain("16 to 64"));
    }

    [Test]
    public async Task ARepeatedOpen_WithTheSameOpenId_GetsTheSameSessionAndToken_AndAnotherUserGetsItsOwn()
    {
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var bob = SecureDuplexServer.ClientFor("bob");
        using var nobody = SecureDuplexServer.ClientFor(null);
        var openId = NewOpenId();

        var first = await OpenAsync(alice, openId);
        var repeated = await OpenAsync(alice, openId);
        Assert.That(repeated, Is.EqualTo(first), "a retried open gets the first answer: no second session");

        var bobs = await OpenAsync(bob, openId);
        var anonymous = await OpenAsync(nobody, openId);
        Assert.That(new[] { bobs.Id, anonymous.Id }, Has.None.EqualTo(first.Id), "another user's open with the same id is not found");
        Assert.That(bobs.Id, Is.Not.EqualTo(anonymous.Id));
        Assert.That(await OpenAsync(bob, openId), Is.EqualTo(bobs), "each user's repeat finds its own");

        // The remembered answer is a working session: alice's repeat can use it.
        using var sent = await RawSession.Attach(alice, _server.Address, repeated.Id, repeated.Token).SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"news\"}}\n");
        Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK));
    }

    [Test]
    public async Task ARepeatedOpen_AfterItsSessionEnded_OpensANewSession()
    {
        using var alice = SecureDuplexServer.ClientFor("alice");
        var openId = NewOpenId();
        var first = await OpenAsync(alice, openId);
        using (var closed = await RawSession.Attach(alice, _server.Address, first.Id, first.Token).CloseAsync())
        {
            Assert.That(closed.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        var again = await OpenAsync(alice, openId);

        Assert.That(again.Id, Is.Not.EqualTo(first.Id));
    }

    [Test]
    public async Task ConcurrentOpens_WithOneOpenId_AllGetOneSession()
    {
        using var alice = SecureDuplexServer.ClientFor("alice");
        var openId = NewOpenId();

        var answers = await Task.WhenAll(Enumerable.Range(0, 8).Select(_ => OpenAsync(alice, openId)));

        Assert.That(answers.Distinct().ToList(), Has.Count.EqualTo(1));
        using var sent = await RawSession.Attach(alice, _server.Address, answers[0].Id, answers[0].Token).SendTextAsync(string.Empty);
        Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), "the answer that stands is a live session: the losers' sessions were closed, not it");
    }

    [Test]
    public async Task ASessionWhosePageWentAway_EndsWithinTheGrace_AsExpired()
    {
        using var alice = SecureDuplexServer.ClientFor("alice");
        var session = await PolledAsync(alice);

        using (var away = await session.SendRawAsync(HttpMethod.Post, $"/sessions/{session.Id}/away"))
        {
            Assert.That(away.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), await away.Content.ReadAsStringAsync());
        }

        // No request on it meanwhile (any would bring it back): the grace plus a few sweeps.
        await Task.Delay(Grace * 3);

        await RawSession.AssertProblemAsync(await session.SendTextAsync(string.Empty), HttpStatusCode.Gone, "session-expired");

        using var again = await session.SendRawAsync(HttpMethod.Post, $"/sessions/{session.Id}/away");
        Assert.That(again.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "an away for an ended session answers the same");
    }

    [Test]
    public async Task ASessionWhosePageCameBack_WithinTheGrace_Lives()
    {
        using var alice = SecureDuplexServer.ClientFor("alice");
        var session = await PolledAsync(alice);
        using (await session.SendRawAsync(HttpMethod.Post, $"/sessions/{session.Id}/away"))
        {
        }

        // The reloaded page's resume: an empty send, within the grace.
        using (var resumed = await session.SendTextAsync(string.Empty))
        {
            Assert.That(resumed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        // Well past the grace and several sweeps, with polls held meanwhile as a page would.
        var until = DateTime.UtcNow + (3 * Grace);
        var ack = 0L;
        while (DateTime.UtcNow < until)
        {
            using var poll = await session.PollAsync(ack);
            Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.NoContent).Or.EqualTo(HttpStatusCode.OK), await poll.Content.ReadAsStringAsync());
        }

        using var still = await session.SendTextAsync(string.Empty);
        Assert.That(still.StatusCode, Is.EqualTo(HttpStatusCode.OK), "a request within the grace gave the session back its inactivity timeout");
    }

    [Test]
    public async Task AnAway_WithAnotherUsersCredentials_Is403AndChangesNothing()
    {
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var bob = SecureDuplexServer.ClientFor("bob");
        var session = await PolledAsync(alice);

        await RawSession.AssertProblemAsync(await RawSession.Attach(bob, _server.Address, session.Id, session.Token).SendRawAsync(HttpMethod.Post, $"/sessions/{session.Id}/away"), HttpStatusCode.Forbidden, "wrong-user");
        await RawSession.AssertProblemAsync(await RawSession.Attach(alice, _server.Address, session.Id, "not-the-token").SendRawAsync(HttpMethod.Post, $"/sessions/{session.Id}/away"), HttpStatusCode.Forbidden, "invalid-token");
        await RawSession.AssertProblemAsync(await RawSession.Attach(alice, _server.Address, session.Id, string.Empty).SendRawAsync(HttpMethod.Post, $"/sessions/{session.Id}/away"), HttpStatusCode.Unauthorized, "missing-token");

        // Past the grace and a few sweeps with no request: the refused aways started nothing.
        await Task.Delay(Grace * 3);
        using var still = await session.SendTextAsync(string.Empty);
        Assert.That(still.StatusCode, Is.EqualTo(HttpStatusCode.OK));
    }

    private static string NewOpenId() => Convert.ToHexString(Guid.NewGuid().ToByteArray());

    private async Task<(string Id, string Token)> OpenAsync(HttpClient http, string openId)
    {
        using var response = await http.PostAsync(new Uri(_server.Address + "/sessions"), RawSession.JsonContent($"{{\"openId\":\"{openId}\"}}"));
        var body = await response.Content.ReadAsStringAsync();
        Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.Created), body);
        using var json = JsonDocument.Parse(body);
        return (json.RootElement.GetProperty("sessionId").GetString()!, json.RootElement.GetProperty("token").GetString()!);
    }

    /// <summary>Opens a session and polls it once, so it is past its pending state as a page's session is.</summary>
    private async Task<RawSession> PolledAsync(HttpClient http)
    {
        var session = await RawSession.OpenAsync(http, _server.Address);
        using var poll = await session.PollAsync(0);
        Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        return session;
    }
}
