using System.Net;
using System.Text.Json;
using ChannelPool.PollingDuplex.PubSub;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// Server-side push through <see cref="IPubSubPublisher"/>: publish to a topic, send to a user, count a topic's
/// subscribers, from a background service, on every store.
/// </summary>
[TestFixture(DuplexStore.InMemory)]
[TestFixture(DuplexStore.Redis)]
public class PublisherTests(DuplexStore store)
{
    [Test]
    public async Task ABackgroundService_Publishes_AndEverySubscriberReceivesEachMessageOnce_InOrder()
    {
        const int Subscribers = 3;
        const int Messages = 20;
        await using var server = await SecureDuplexServer.StartAsync(
            store,
            o =>
            {
                o.Topics.AllowAnonymous = true;
                o.ServerPollTimeout = TimeSpan.FromSeconds(2);
            },
            services: s => s.AddHostedService(provider => new PricePublisher(provider.GetRequiredKeyedService<IPubSubPublisher>("/pubsub"), Subscribers, Messages)));
        using var http = SecureDuplexServer.ClientFor(null);
        var sessions = await Task.WhenAll(Enumerable.Range(0, Subscribers).Select(_ => RawSession.OpenAsync(http, server.Address)));
        foreach (var session in sessions)
        {
            using (await session.SendTextAsync(TopicRuleTests.Command(1, "subscribe", "prices")))
            {
            }
        }

        var received = await Task.WhenAll(sessions.Select(s => PollUntilAsync(s, Messages)));

        foreach (var data in received)
        {
            Assert.That(data, Is.EqualTo(Enumerable.Range(1, Messages).Select(i => $"{{\"topic\":\"prices\",\"data\":{{\"tick\":{i}}}}}")));
        }
    }

    [Test]
    public async Task SendToUser_ReachesEverySessionOfThatUser_InOrder_AndNobodyElse()
    {
        await using var server = await SecureDuplexServer.StartAsync(store, o =>
        {
            o.Topics.AllowAnonymous = true;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(500);
        });
        using var alice = SecureDuplexServer.ClientFor("alice");
        using var bob = SecureDuplexServer.ClientFor("bob");
        var alices = new[] { await RawSession.OpenAsync(alice, server.Address), await RawSession.OpenAsync(alice, server.Address) };
        var bobs = await RawSession.OpenAsync(bob, server.Address);
        var publisher = server.Services.GetRequiredService<IPubSubPublisher>();

        for (var i = 1; i <= 3; i++)
        {
            await publisher.SendToUserAsync("alice", DuplexMessage.FromJson(new { note = i }));
        }

        await publisher.SendToUserAsync("nobody-signed-in", DuplexMessage.FromJson(new { note = 0 }));
        foreach (var session in alices)
        {
            Assert.That(await PollUntilAsync(session, 3), Is.EqualTo(new[] { "{\"note\":1}", "{\"note\":2}", "{\"note\":3}" }));
        }

        using var nothing = await bobs.PollAsync(0);
        Assert.That(nothing.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
    }

    /// <summary>Polls (acknowledging as it goes) until <paramref name="count"/> messages came, and returns their payloads.</summary>
    private static async Task<List<string>> PollUntilAsync(RawSession session, int count)
    {
        var payloads = new List<string>();
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (payloads.Count < count && DateTime.UtcNow < deadline)
        {
            using var response = await session.PollAsync(payloads.Count);
            if (response.StatusCode != HttpStatusCode.OK)
            {
                Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.NoContent), await response.Content.ReadAsStringAsync());
                continue;
            }

            foreach (var line in (await response.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries))
            {
                using var frame = JsonDocument.Parse(line);
                Assert.That(frame.RootElement.GetProperty("seq").GetInt64(), Is.EqualTo(payloads.Count + 1), "exactly once, in order");
                payloads.Add(frame.RootElement.GetProperty("data").GetRawText());
            }
        }

        return payloads;
    }

    /// <summary>The application's background publisher: waits for its subscribers, then publishes a tick at a time.</summary>
    private sealed class PricePublisher(IPubSubPublisher publisher, int subscribers, int messages) : BackgroundService
    {
        protected override async Task ExecuteAsync(CancellationToken stoppingToken)
        {
            while (await publisher.CountSubscribersAsync("prices", stoppingToken) < subscribers)
            {
                await Task.Delay(20, stoppingToken);
            }

            for (var i = 1; i <= messages; i++)
            {
                await publisher.PublishAsync("prices", DuplexMessage.FromJson(new { tick = i }), stoppingToken);
            }
        }
    }
}
