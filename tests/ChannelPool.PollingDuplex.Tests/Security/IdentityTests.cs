using System.Net;
using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// A session belongs to the user whose request opened it. Every later request of the session must be that user's: any
/// other identity, or none, gets <c>403 wrong-user</c> and leaves the session exactly as it was.
/// </summary>
[TestFixture(DuplexStore.InMemory)]
[TestFixture(DuplexStore.Redis)]
public class IdentityTests(DuplexStore store)
{
    private const string Subscribe = "{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"news\"}}\n";

    [Test]
    public async Task AnotherUsersIdentity_OnSomeonesSession_Is403WrongUser_AndTheSessionIsUnaffected()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromSeconds(5);
        });
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var bob = SecureDuplexServer.ClientFor("bob");
        using var nobody = SecureDuplexServer.ClientFor(null);
        var session = await RawSession.OpenAsync(alice, server.Address);
        using (var subscribed = await session.SendTextAsync(Subscribe))
        {
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        // Alice's poll is outstanding; every request below carries her session's own token.
        var held = session.PollAsync(0);
        foreach (var (who, http) in new[] { ("bob", bob), ("an anonymous request", nobody) })
        {
            var stolen = RawSession.Attach(http, server.Address, session.Id, session.Token);
            var poll = await RawSession.AssertProblemAsync(await stolen.PollAsync(0), HttpStatusCode.Forbidden, "wrong-user");
            Assert.That(poll.GetProperty("detail").GetString(), Does.Contain(session.Id), who);
            await RawSession.AssertProblemAsync(await stolen.SendTextAsync("{\"seq\":2,\"data\":{\"op\":\"publish\",\"topic\":\"news\",\"data\":\"forged\",\"echo\":true}}\n"), HttpStatusCode.Forbidden, "wrong-user");
            await RawSession.AssertProblemAsync(await stolen.CloseAsync(), HttpStatusCode.Forbidden, "wrong-user");
        }

        Assert.That(held.IsCompleted, Is.False, "the other users' polls did not supersede alice's");

        // Alice's own next message is sequence 2: nothing of the forged publish was received or delivered.
        using (var own = await session.SendTextAsync("{\"seq\":2,\"data\":{\"op\":\"publish\",\"topic\":\"news\",\"data\":\"mine\",\"echo\":true}}\n"))
        {
            Assert.That(await own.Content.ReadAsStringAsync(), Is.EqualTo("{\"received\":2}"));
        }

        using var delivered = await held.Within();
        Assert.That(delivered.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        Assert.That((await delivered.Content.ReadAsStringAsync()).Trim(), Is.EqualTo("{\"seq\":1,\"type\":\"message\",\"data\":{\"topic\":\"news\",\"data\":\"mine\"}}"));
        using var closed = await session.CloseAsync();
        Assert.That(closed.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "the session was still open: nobody else closed it");
    }

    [Test]
    public async Task ASessionOpenedAnonymously_RefusesASignedInRequest_AndTheOtherWayRound()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o => o.Topics.AllowAnonymous = true);
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var nobody = SecureDuplexServer.ClientFor(null);
        var anonymous = await RawSession.OpenAsync(nobody, server.Address);
        var alices = await RawSession.OpenAsync(alice, server.Address);

        await RawSession.AssertProblemAsync(await RawSession.Attach(alice, server.Address, anonymous.Id, anonymous.Token).SendTextAsync(Subscribe), HttpStatusCode.Forbidden, "wrong-user");
        await RawSession.AssertProblemAsync(await RawSession.Attach(nobody, server.Address, alices.Id, alices.Token).SendTextAsync(Subscribe), HttpStatusCode.Forbidden, "wrong-user");

        using var anonymousOwn = await anonymous.SendTextAsync(Subscribe);
        using var alicesOwn = await alices.SendTextAsync(Subscribe);
        Assert.That((anonymousOwn.StatusCode, alicesOwn.StatusCode), Is.EqualTo((HttpStatusCode.OK, HttpStatusCode.OK)));
    }

    [Test]
    public async Task ACookieSignedInBrowser_UsesItsSession_AndTheSameUserWithAJwt_MayToo()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(200);
        });
        using var browser = await server.CookieClientForAsync("alice");
        using var aliceApi = SecureDuplexServer.ClientFor("alice");
        using var mallory = await server.CookieClientForAsync("mallory");
        var session = await RawSession.OpenAsync(browser, server.Address);

        using (var own = await session.SendTextAsync(Subscribe))
        {
            Assert.That(own.StatusCode, Is.EqualTo(HttpStatusCode.OK), "the cookie identifies the same user on every request");
        }

        // The session is bound to the user id, not to a credential: the same user through another scheme is the same user.
        using (var sameUser = await RawSession.Attach(aliceApi, server.Address, session.Id, session.Token).PollAsync(0))
        {
            Assert.That(sameUser.StatusCode, Is.EqualTo(HttpStatusCode.NoContent).Or.EqualTo(HttpStatusCode.OK));
        }

        await RawSession.AssertProblemAsync(await RawSession.Attach(mallory, server.Address, session.Id, session.Token).PollAsync(0), HttpStatusCode.Forbidden, "wrong-user");
    }

    [Test]
    public async Task ADotNetClient_SendsItsAppsJwt_BesideTheSessionToken()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o => o.Topics.AllowAnonymous = true);
        using var http = SecureDuplexServer.ClientFor("alice");
        var client = new PollingDuplexClient(http, server.Address, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        await using var session = await client.OpenSessionAsync();
        await session.SendAsync([DuplexMessage.FromJson(new { op = "subscribe", topic = "news" }), DuplexMessage.FromJson(new { op = "publish", topic = "news", data = 1, echo = true })]);

        var first = await session.ReceiveAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(30));

        Assert.That(first.Message!.ToString(), Is.EqualTo("{\"topic\":\"news\",\"data\":1}"));
        Assert.That(session.State, Is.EqualTo(DuplexClientSessionState.Open));
    }

    [Test]
    public async Task TheSessionToken_TravelsInItsOwnHeader_NotInAuthorization()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o => o.Topics.AllowAnonymous = true);
        using var nobody = SecureDuplexServer.ClientFor(null);
        var session = await RawSession.OpenAsync(nobody, server.Address);

        // The old place: a JWT-shaped Authorization header is the app's, and is not read as the session token.
        using var request = new HttpRequestMessage(HttpMethod.Get, new Uri($"{server.Address}/sessions/{session.Id}/poll?ack=0"));
        request.Headers.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", session.Token);
        using var response = await nobody.SendAsync(request);

        var problem = await RawSession.AssertProblemAsync(response, HttpStatusCode.Unauthorized, "missing-token");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain(DuplexWire.SessionTokenHeader));
        Assert.That(response.Headers.WwwAuthenticate.ToString(), Is.EqualTo(DuplexWire.SessionTokenHeader));
    }
}
