using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// A browser on another origin sends the session token in a header of its own, which no CORS request may carry
/// unannounced: every send, poll and close is preflighted. The policy docs/polling-duplex-protocol.md gives answers it.
/// </summary>
public class CorsTests
{
    private const string App = "https://app.example";

    [Test]
    public async Task ThePreflight_ForTheSessionTokenAndTheAppsCredentials_IsAnsweredByTheDocumentedPolicy()
    {
        await using var server = await StartAsync();
        using var http = SecureDuplexServer.ClientFor(null);
        var session = await RawSession.OpenAsync(http, server.Address);

        using var preflight = await PreflightAsync(http, new Uri($"{server.Address}/sessions/{session.Id}/poll?ack=0"), App, "GET", "duplex-session-token,authorization");
        using var foreign = await PreflightAsync(http, new Uri($"{server.Address}/sessions/{session.Id}/messages"), "https://elsewhere.example", "POST", "duplex-session-token,content-type");

        Assert.That(preflight.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        Assert.That(preflight.Headers.GetValues("Access-Control-Allow-Origin"), Is.EqualTo(new[] { App }));
        Assert.That(preflight.Headers.GetValues("Access-Control-Allow-Credentials"), Is.EqualTo(new[] { "true" }));
        Assert.That(string.Join(",", preflight.Headers.GetValues("Access-Control-Allow-Headers")).ToLowerInvariant(), Does.Contain("duplex-session-token").And.Contain("authorization"));
        Assert.That(preflight.Headers.GetValues("Access-Control-Max-Age"), Is.EqualTo(new[] { "600" }));
        Assert.That(foreign.Headers.Contains("Access-Control-Allow-Origin"), Is.False, "another origin is not allowed");

        // The real request after the preflight: answered with the origin allowed, so the browser hands the body over.
        using var poll = new HttpRequestMessage(HttpMethod.Get, new Uri($"{server.Address}/sessions/{session.Id}/poll?ack=0"));
        poll.Headers.Add("Origin", App);
        poll.Headers.Add(DuplexWire.SessionTokenHeader, session.Token);
        using var polled = await http.SendAsync(poll);
        Assert.That(polled.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        Assert.That(polled.Headers.GetValues("Access-Control-Allow-Origin"), Is.EqualTo(new[] { App }));
    }

    private static async Task<HttpResponseMessage> PreflightAsync(HttpClient http, Uri uri, string origin, string method, string headers)
    {
        using var request = new HttpRequestMessage(HttpMethod.Options, uri);
        request.Headers.Add("Origin", origin);
        request.Headers.Add("Access-Control-Request-Method", method);
        request.Headers.Add("Access-Control-Request-Headers", headers);
        return await http.SendAsync(request);
    }

    private static Task<SecureDuplexServer> StartAsync() => SecureDuplexServer.StartAsync(
        DuplexStore.InMemory,
        o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(200);
        },
        services: s => s.AddCors(cors => cors.AddPolicy("duplex", policy => policy
            .WithOrigins(App)
            .WithMethods("GET", "POST", "DELETE")
            .WithHeaders(DuplexWire.SessionTokenHeader, "Content-Type", "Authorization")
            .AllowCredentials()
            .SetPreflightMaxAge(TimeSpan.FromMinutes(10)))),
        pipeline: app => app.UseCors(),
        routes: group => group.RequireCors("duplex"));
}
