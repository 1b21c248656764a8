using ChannelPool.PollingDuplex.Stores;
using System.Text;
using ChannelPool.PollingDuplex.PubSub;
using Microsoft.Extensions.Logging.Abstractions;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>What a publish queues, looked at from inside the server: one message, one set of bytes, every subscriber.</summary>
public class BroadcastSharingTests
{
    [TestCase("PubSubHandler.Publish")]
    [TestCase("IPubSubPublisher.PublishAsync")]
    public async Task Publish_SerializesOnce_AndQueuesTheSameBytesToEverySubscriber(string publisher)
    {
        var pubSub = new PubSubHandler();
        using var server = new InMemorySessionStore("/pubsub", new PollingDuplexOptions(), pubSub, TimeProvider.System, NullLogger.Instance);
        var sessions = new List<DuplexSession>();
        for (var i = 0; i < 5; i++)
        {
            Assert.That(server.TryReserve(), Is.Null);
            var (session, _) = server.Create(i % 2 == 0 ? DuplexEncoding.Text : DuplexEncoding.Binary, PollingDuplexMode.MultipleMessagesPerPoll);
            await pubSub.OnMessageAsync(session, DuplexMessage.FromJson(new { op = "subscribe", topic = "news" }), CancellationToken.None);
            sessions.Add(session);
        }

        if (publisher == "PubSubHandler.Publish")
        {
            Assert.That(pubSub.Publish("news", "{\"headline\":\"once\"}"u8), Is.EqualTo(5));
        }
        else
        {
            var service = new PubSubPublisher(server);
            Assert.That((await service.CountSubscribersAsync("news"), await service.CountSubscribersAsync("nobody")), Is.EqualTo((5L, 0L)));
            await service.PublishAsync("news", DuplexMessage.FromJson(new { headline = "once" }));
        }

        var queued = sessions.Select(session =>
        {
            var frames = new List<DuplexFrame>();
            var ticket = session.BeginPoll(0, out _, out _)!;
            Assert.That(session.TakeFrames(ticket, frames, maxFrames: 64).Status, Is.EqualTo(DuplexTakeStatus.Frames));
            return frames.Single().Message!;
        }).ToList();
        Assert.That(queued.Distinct(), Has.Exactly(1).Items, "one DuplexMessage instance, shared by every session in both encodings");
        Assert.That(Encoding.UTF8.GetString(queued[0].Payload.Span), Is.EqualTo("{\"topic\":\"news\",\"data\":{\"headline\":\"once\"}}"));
    }
}
