using System.Text;
using System.Text.Json;
using ChannelPool.PollingDuplex.Client;
using ChannelPool.PollingDuplex.PubSub;

namespace ChannelPool.PollingDuplex.Tests;

public class PubSubTests
{
    [Test]
    public async Task Broadcast_ReachesHundredsOfSubscribers_EachMessageOnceInOrder()
    {
        const int Subscribers = 300;
        const int Bursts = 5;
        await using var server = await DuplexTestServer.StartAsync(o => o.MaxPendingMessagesPerSession = 16);
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.PubSub, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Binary });
        var sessions = await Task.WhenAll(Enumerable.Range(0, Subscribers).Select(async _ =>
        {
            var session = await client.OpenSessionAsync();
            await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "broadcast" }));
            return session;
        })).Within();
        Assert.That(server.PubSubService.SubscriberCount("broadcast"), Is.EqualTo(Subscribers));

        var reading = sessions.Select(s => DeliveryTests.ReadAsync(s, Bursts)).ToList();
        await using (var publisher = await client.OpenSessionAsync())
        {
            for (var burst = 1; burst <= Bursts; burst++)
            {
                await publisher.SendAsync(DuplexMessage.FromJson(new { op = "publish", topic = "broadcast", data = burst }));
            }
        }

        var received = await Task.WhenAll(reading).Within();
        Assert.That(received, Has.All.Count.EqualTo(Bursts));
        Assert.That(received.Select(r => r.Select(d => Data(d.Message!).GetInt32())), Has.All.EqualTo(Enumerable.Range(1, Bursts)));
        await Task.WhenAll(sessions.Select(s => s.CloseAsync())).Within();
        await Eventually.That(() => server.PubSubService.SubscriberCount("broadcast") == 0, "closed sessions left their topic");
    }

    [Test]
    public async Task Collaboration_ManySmallTopics_MembersHearEachOtherAndNoOneElse()
    {
        const int Topics = 50;
        const int Members = 4;
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.PubSub, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        var members = await Task.WhenAll(Enumerable.Range(0, Topics * Members).Select(async i =>
        {
            var session = await client.OpenSessionAsync();
            await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = $"room-{i / Members}" }));
            return (Topic: i / Members, Member: i % Members, Session: session);
        })).Within();

        var reading = members.Select(m => DeliveryTests.ReadAsync(m.Session, Members - 1)).ToList();
        await Task.WhenAll(members.Select(m => m.Session.SendAsync(
            DuplexMessage.FromJson(new { op = "publish", topic = $"room-{m.Topic}", data = new { room = m.Topic, from = m.Member } })).AsTask())).Within();
        var received = await Task.WhenAll(reading).Within();

        for (var i = 0; i < members.Length; i++)
        {
            var heard = received[i].Select(d => Data(d.Message!)).ToList();
            Assert.That(heard.Select(h => h.GetProperty("room").GetInt32()), Has.All.EqualTo(members[i].Topic), "only its own room");
            Assert.That(heard.Select(h => h.GetProperty("from").GetInt32()), Is.EquivalentTo(Enumerable.Range(0, Members).Where(m => m != members[i].Member)), "every other member, and not itself");
        }

        await Task.WhenAll(members.Select(m => m.Session.CloseAsync())).Within();
    }

    [Test]
    public async Task InvalidCommand_IsRejectedWithItsReason()
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.PubSub, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        await using var session = await client.OpenSessionAsync();

        var unknown = Assert.ThrowsAsync<PollingDuplexException>(async () => await session.SendAsync(DuplexMessage.FromJson(new { op = "shout", topic = "t" })));
        var noTopic = Assert.ThrowsAsync<PollingDuplexException>(async () => await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe" })));
        var noData = Assert.ThrowsAsync<PollingDuplexException>(async () => await session.SendAsync(DuplexMessage.FromJson(new { op = "publish", topic = "t" })));
        var badEcho = Assert.ThrowsAsync<PollingDuplexException>(async () => await session.SendAsync(DuplexMessage.FromJsonUtf8("{\"op\":\"publish\",\"topic\":\"t\",\"data\":1,\"echo\":\"yes\"}"u8.ToArray())));
        var repeated = Assert.ThrowsAsync<PollingDuplexException>(async () => await session.SendAsync(DuplexMessage.FromJsonUtf8("{\"op\":\"subscribe\",\"topic\":\"a\",\"topic\":\"b\"}"u8.ToArray())));

        Assert.That(unknown!.Code, Is.EqualTo("message-rejected"));
        Assert.That(unknown.Message, Does.Contain("Unknown op \"shout\""));
        Assert.That(noTopic!.Message, Does.Contain("needs a \"topic\""));
        Assert.That(noData!.Message, Does.Contain("needs \"data\""));
        Assert.That(badEcho!.Message, Does.Contain("\"echo\" must be true or false"));
        Assert.That(repeated!.Message, Does.Contain("must not repeat \"topic\""));
        await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "t" }));
        Assert.That(server.PubSubService.SubscriberCount("t"), Is.EqualTo(1), "the session goes on after rejected commands");
    }

    [Test]
    public async Task ServerPublishTooLargeForSubscribers_IsRefused_AndNoSubscriberFaults()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.MaxMessageSize = 200);
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.PubSub, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        await using var subscriber = await client.OpenSessionAsync();
        await subscriber.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "t" }));

        Assert.That(
            () => server.PubSubService.Publish("t", Encoding.UTF8.GetBytes($"\"{new string('x', 190)}\"")),
            Throws.ArgumentException.With.Message.Contains("over the endpoint's 200-byte MaxMessageSize"));
        Assert.That(server.PubSubService.Publish("t", "\"small\""u8), Is.EqualTo(1));

        var delivery = await subscriber.ReceiveAsync().Within();
        Assert.That(Data(delivery.Message!).GetString(), Is.EqualTo("small"), "the subscriber got the next message, and nothing broken before it");
        Assert.That(subscriber.State, Is.EqualTo(DuplexClientSessionState.Open));
    }

    [TestCase("1,\"forged\":2", TestName = "ServerPublish_OfTwoValuesThatWouldForgeAMember_IsRefused")]
    [TestCase("{\"a\":1} {\"b\":2}", TestName = "ServerPublish_OfTwoObjects_IsRefused")]
    [TestCase("", TestName = "ServerPublish_OfNothing_IsRefused")]
    [TestCase("{\"open\":", TestName = "ServerPublish_OfAnUnfinishedValue_IsRefused")]
    public async Task ServerPublish_OfDataThatIsNotOneJsonValue_IsRefused_AndNothingIsQueued(string data)
    {
        var pubSub = new PubSubHandler();
        using var store = new InMemorySessionStore("/pubsub", new PollingDuplexOptions(), pubSub, TimeProvider.System, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);
        Assert.That(store.TryReserve(), Is.Null);
        var (subscriber, _) = store.Create(DuplexEncoding.Text, PollingDuplexMode.MultipleMessagesPerPoll);
        await pubSub.OnMessageAsync(subscriber, DuplexMessage.FromJson(new { op = "subscribe", topic = "t" }), CancellationToken.None);

        Assert.That(
            () => pubSub.Publish("t", Encoding.UTF8.GetBytes(data)),
            Throws.ArgumentException.With.Message.StartsWith("The data must be one JSON value in valid UTF-8").And.Property(nameof(ArgumentException.ParamName)).EqualTo("data"));

        var frames = new List<DuplexFrame>();
        var poll = subscriber.BeginPoll(0, out _, out _)!;
        Assert.That(subscriber.TakeFrames(poll, frames, maxFrames: 64).Status, Is.EqualTo(ChannelPool.PollingDuplex.Stores.DuplexTakeStatus.Waiting), "nothing was queued");
    }

    [Test]
    public void ServerPublish_OfInvalidUtf8_IsRefused()
    {
        var pubSub = new PubSubHandler();

        Assert.That(() => pubSub.Publish("t", [(byte)'"', 0xFF, (byte)'"']), Throws.ArgumentException.With.Message.Contains("not valid UTF-8"));
    }

    private static JsonElement Data(DuplexMessage message) => JsonDocument.Parse(message.Payload).RootElement.GetProperty("data").Clone();
}
