using ChannelPool.PollingDuplex.Stores;
using System.Buffers.Binary;
using System.Net;
using System.Text;
using System.Text.Json;
using ChannelPool.PollingDuplex.Client;
using ChannelPool.PollingDuplex.PubSub;
using Microsoft.Extensions.Logging.Abstractions;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>A subscriber's framing never depends on what another client sent, and what is checked against a limit is what is sent.</summary>
public class FramingSafetyTests
{
    private const string BinaryType = "application/vnd.channelpool.duplex-frames";

    [Test]
    public async Task BinaryPublishWithNewlinesInItsData_ReachesATextSubscriber_AsOneLine()
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.PubSub, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text });
        await using var subscriber = await client.OpenSessionAsync().Within();
        await subscriber.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "t" })).AsTask().Within();
        var publisher = await RawSession.OpenAsync(http, server.PubSub, "binary");

        using var sent = await publisher.SendAsync(Frame(1, "{\"op\":\"publish\",\"topic\":\"t\",\"data\":{\"a\":\n[1,\r\n2]}}"u8.ToArray()), BinaryType);
        Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());

        var delivery = await subscriber.ReceiveAsync().AsTask().Within();
        Assert.That(delivery.Message!.ToString(), Is.EqualTo("{\"topic\":\"t\",\"data\":{\"a\":[1,2]}}"));
        Assert.That(subscriber.State, Is.EqualTo(DuplexClientSessionState.Open));
    }

    [Test]
    public async Task IndentedJsonFromTheApplication_IsSentOnOneLine()
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex, "text");
        var onServer = server.Recorder.Sessions[session.Id];

        onServer.Send(DuplexMessage.FromJsonUtf8("{\n  \"a\": [ 1,\r\n 2 ],\n  \"s\": \"x y\"\n}"u8.ToArray()));
        onServer.Send(DuplexMessage.FromJson(new { b = 1 }, new JsonSerializerOptions { WriteIndented = true }));

        using var poll = await session.PollAsync(0);
        var lines = (await poll.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.That(lines, Is.EqualTo(new[]
        {
            "{\"seq\":1,\"type\":\"message\",\"data\":{\"a\":[1,2],\"s\":\"x y\"}}",
            "{\"seq\":2,\"type\":\"message\",\"data\":{\"b\":1}}",
        }));
    }

    [Test]
    public async Task InvalidUtf8InATextSend_Is400_AndNothingIsForwarded()
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();
        var subscriber = await RawSession.OpenAsync(http, server.PubSub, "text");
        using (var subscribed = await subscriber.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n"))
        {
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        var publisher = await RawSession.OpenAsync(http, server.PubSub, "text");
        byte[] body = [.. "{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"t\",\"data\":\"bad "u8, 0xC3, 0x28, .. "\"}}\n"u8];

        using var sent = await publisher.SendAsync(body);

        var problem = await RawSession.AssertProblemAsync(sent, HttpStatusCode.BadRequest, "malformed-frame");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("UTF-8"));
        Assert.That(server.PubSubService.SubscriberCount("t"), Is.EqualTo(1));
    }

    [Test]
    public async Task InvalidUtf8InABinaryPublish_IsRejected_WithA4xx()
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();
        var publisher = await RawSession.OpenAsync(http, server.PubSub, "binary");
        byte[] command = [.. "{\"op\":\"publish\",\"topic\":\"t\",\"data\":\"bad "u8, 0xFF, .. "\"}"u8];

        using var sent = await publisher.SendAsync(Frame(1, command), BinaryType);

        var problem = await RawSession.AssertProblemAsync(sent, HttpStatusCode.UnprocessableEntity, "message-rejected");
        Assert.That(problem.GetProperty("detail").GetString(), Does.Contain("UTF-8"));
    }

    [Test]
    public async Task APublishAtTheSizeLimit_WhoseTopicTheEncoderCouldEscape_IsDelivered()
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient();
        var topic = new string('<', PubSubHandler.MaxTopicLength);
        var subscriber = await RawSession.OpenAsync(http, server.PubSub, "binary");
        using (var subscribed = await subscriber.SendAsync(Frame(1, Encoding.UTF8.GetBytes($"{{\"op\":\"subscribe\",\"topic\":\"{topic}\"}}")), BinaryType))
        {
            Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        var publisher = await RawSession.OpenAsync(http, server.PubSub, "binary");
        var head = $"{{\"op\":\"publish\",\"topic\":\"{topic}\",\"data\":\"";
        var command = Encoding.UTF8.GetBytes(head + new string('<', 64 * 1024 - head.Length - 2) + "\"}");
        Assert.That(command, Has.Length.EqualTo(64 * 1024), "exactly MaxMessageSize");

        using var sent = await publisher.SendAsync(Frame(1, command), BinaryType);

        Assert.That(sent.StatusCode, Is.EqualTo(HttpStatusCode.OK), await sent.Content.ReadAsStringAsync());
        using var poll = await subscriber.PollAsync(0);
        var body = await poll.Content.ReadAsByteArrayAsync();
        Assert.That(poll.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        var length = BinaryPrimitives.ReadUInt32BigEndian(body.AsSpan(9));
        Assert.That(length, Is.LessThanOrEqualTo(64 * 1024));
        using var notification = JsonDocument.Parse(body.AsMemory(DuplexWire.BinaryHeaderSize, (int)length));
        Assert.That(notification.RootElement.GetProperty("topic").GetString(), Is.EqualTo(topic));
    }

    [Test]
    public async Task Publish_FromBothEncodings_QueuesOneMessage_SharedByBothEncodings()
    {
        var pubSub = new PubSubHandler();
        using var server = new InMemorySessionStore("/pubsub", new PollingDuplexOptions(), pubSub, TimeProvider.System, NullLogger.Instance);
        var sessions = new List<DuplexSession>();
        for (var i = 0; i < 4; i++)
        {
            Assert.That(server.TryReserve(), Is.Null);
            var (session, _) = server.Create(i % 2 == 0 ? DuplexEncoding.Text : DuplexEncoding.Binary, PollingDuplexMode.MultipleMessagesPerPoll);
            await pubSub.OnMessageAsync(session, DuplexMessage.FromJson(new { op = "subscribe", topic = "news" }), CancellationToken.None);
            sessions.Add(session);
        }

        await pubSub.OnMessageAsync(sessions[1], DuplexMessage.FromBytes("{\"op\":\"publish\",\"topic\":\"news\",\"echo\":true,\"data\":[1,\n 2]}"u8.ToArray()), CancellationToken.None);

        var queued = sessions.Select(session =>
        {
            var frames = new List<DuplexFrame>();
            var ticket = session.BeginPoll(0, out _, out _)!;
            Assert.That(session.TakeFrames(ticket, frames, maxFrames: 64).Status, Is.EqualTo(DuplexTakeStatus.Frames));
            return frames.Single().Message!;
        }).ToList();
        Assert.That(queued.Distinct(), Has.Exactly(1).Items, "one encoded form, shared by text and binary subscribers");
        Assert.That(queued[0].ToString(), Is.EqualTo("{\"topic\":\"news\",\"data\":[1,2]}"));
    }

    internal static byte[] Frame(ulong seq, byte[] payload)
    {
        var frame = new byte[DuplexWire.BinaryHeaderSize + payload.Length];
        frame[0] = 1;
        BinaryPrimitives.WriteUInt64BigEndian(frame.AsSpan(1), seq);
        BinaryPrimitives.WriteUInt32BigEndian(frame.AsSpan(9), (uint)payload.Length);
        payload.CopyTo(frame, DuplexWire.BinaryHeaderSize);
        return frame;
    }
}
