using System.Diagnostics;
using System.Net;
using ChannelPool.PollingDuplex.Client;
using ChannelPool.PollingDuplex.RateLimiting;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// Per-client limits through ASP.NET Core's rate limiter, with the package's policy (<see cref="PollingDuplexRateLimitPolicy"/>):
/// one bucket per signed-in user (per address when anonymous), a token per message, signed-in polls exempt.
/// </summary>
public class RateLimitTests
{
    [Test]
    public async Task APublishFloodFromOneUser_HitsThatUsersLimit_WhileOtherUsersAreUnaffected()
    {
        await using var server = await StartAsync(burst: 10, perSecond: 1);
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var bob = SecureDuplexServer.ClientFor("bob");
        var alices = await RawSession.OpenAsync(alice, server.Address);
        var bobs = await RawSession.OpenAsync(bob, server.Address);

        // Alice floods: 40 publishes, one request each, as fast as they go; a refused one is sent again, numbered as before.
        var limited = 0;
        var next = 1;
        for (var i = 0; i < 40; i++)
        {
            using var response = await alices.SendTextAsync(TopicRuleTests.Command(next, "publish", "chat"));
            if (response.StatusCode == HttpStatusCode.OK)
            {
                next++;
                continue;
            }

            if (limited++ == 0)
            {
                var problem = await RawSession.AssertProblemAsync(response, HttpStatusCode.TooManyRequests, "rate-limited");
                Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("Retry-After"));
                Assert.That(response.Headers.RetryAfter?.Delta, Is.GreaterThanOrEqualTo(TimeSpan.FromSeconds(1)));
            }
        }

        Assert.That(limited, Is.GreaterThanOrEqualTo(25), $"alice's bucket holds 10 (her open took one); {40 - limited} sends got through");
        for (var i = 1; i <= 9; i++)
        {
            using var response = await bobs.SendTextAsync(TopicRuleTests.Command(i, "publish", "chat"));
            Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.OK), $"bob's send {i}: his bucket is his own");
        }

        using var poll = await alices.PollAsync(0);
        Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), "polls are not limited: a limited client falls behind, it does not slow down");
    }

    [Test]
    public async Task AnonymousClients_ShareTheirAddresssBucket_AndSignedInUsersKeepTheirOwn()
    {
        await using var server = await StartAsync(burst: 3, perSecond: 1);
        using var first = SecureDuplexServer.ClientFor(null);
        using var second = SecureDuplexServer.ClientFor(null);
        using var alice = SecureDuplexServer.ClientFor("alice");

        var statuses = new List<HttpStatusCode>();
        foreach (var http in new[] { first, second, first, second })
        {
            using var opened = await http.PostAsync(new Uri(server.Address + "/sessions"), RawSession.JsonContent("{}"));
            statuses.Add(opened.StatusCode);
        }

        using var alicesOpen = await alice.PostAsync(new Uri(server.Address + "/sessions"), RawSession.JsonContent("{}"));
        Assert.That(statuses, Is.EqualTo(new[] { HttpStatusCode.Created, HttpStatusCode.Created, HttpStatusCode.Created, HttpStatusCode.TooManyRequests }), "both anonymous clients come from 127.0.0.1: one bucket of 3");
        Assert.That(alicesOpen.StatusCode, Is.EqualTo(HttpStatusCode.Created));
    }

    [Test]
    public async Task TheDotNetClient_WaitsOutA429_AndSendsAgain_DeliveringEachMessageOnce()
    {
        await using var server = await StartAsync(burst: 3, perSecond: 2);
        using var http = SecureDuplexServer.ClientFor("alice");
        var client = new PollingDuplexClient(http, server.Address, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        await using var session = await client.OpenSessionAsync();
        var clock = Stopwatch.StartNew();

        await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "me" }));
        for (var i = 1; i <= 6; i++)
        {
            await session.SendAsync(DuplexMessage.FromJson(new { op = "publish", topic = "me", data = i, echo = true }));
        }

        var received = new List<string>();
        for (var i = 1; i <= 6; i++)
        {
            received.Add((await session.ReceiveAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(30))).Message!.ToString());
        }

        Assert.That(received, Is.EqualTo(Enumerable.Range(1, 6).Select(i => $"{{\"topic\":\"me\",\"data\":{i}}}")));
        Assert.That(clock.Elapsed, Is.GreaterThan(TimeSpan.FromSeconds(1)), "the bucket (3, then 2 a second) held the sends back");
    }

    private static Task<SecureDuplexServer> StartAsync(int burst, int perSecond) => SecureDuplexServer.StartAsync(
        DuplexStore.InMemory,
        o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(200);
        },
        services: s => s.AddRateLimiter(limiter => limiter.AddPolicy(PollingDuplexRateLimitPolicy.Name, new PollingDuplexRateLimitPolicy(burst, perSecond))),
        pipeline: app => app.UseRateLimiter(),
        routes: group => group.RequireRateLimiting(PollingDuplexRateLimitPolicy.Name));
}
