using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Peers.SignalR;
using Microsoft.AspNetCore.SignalR;
using Microsoft.AspNetCore.SignalR.Client;

namespace ChannelPool.Perf.Tests;

[TestFixture(SignalRTransportKind.LongPolling)]
[TestFixture(SignalRTransportKind.WebSockets)]
internal sealed class SignalRTransportTests(SignalRTransportKind kind)
{
    // Generous: the machine running the tests may be a loaded 2-core box. Only a hang comes near it.
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    private static readonly byte[] One = """{"n":1}"""u8.ToArray();

    [Test]
    public async Task Publish_ReachesTheTopicsOtherSubscribers_NotThePublisherNorAnotherTopic()
    {
        await using var server = await SignalRTestServer.StartAsync();
        await using var transport = server.CreateTransport(kind);
        await using var publisher = await Inbox.ConnectAsync(transport);
        await using var first = await Inbox.ConnectAsync(transport);
        await using var second = await Inbox.ConnectAsync(transport);
        await using var outsider = await Inbox.ConnectAsync(transport);
        await Task.WhenAll(
            publisher.Client.SubscribeAsync("t", default),
            first.Client.SubscribeAsync("t", default),
            second.Client.SubscribeAsync("t", default),
            outsider.Client.SubscribeAsync("other", default)).WaitAsync(Patience);

        await publisher.Client.PublishAsync("t", One, default).WaitAsync(Patience);
        await first.WaitForAsync(1);
        await second.WaitForAsync(1);
        await RoundTripAsync(publisher, first, second, outsider);

        Assert.That(first.Received, Is.EqualTo(new[] { """{"n":1}""" }));
        Assert.That(second.Received, Is.EqualTo(new[] { """{"n":1}""" }));
        Assert.That(publisher.Received, Is.Empty, "a publisher does not hear itself");
        Assert.That(outsider.Received, Is.Empty, "another topic hears nothing");
    }

    [Test]
    public async Task ManyPublishes_ArriveWholeAndInOrder_AtEverySubscriber()
    {
        const int Messages = 200;
        await using var server = await SignalRTestServer.StartAsync();
        await using var transport = server.CreateTransport(kind);
        await using var publisher = await Inbox.ConnectAsync(transport);
        await using var first = await Inbox.ConnectAsync(transport);
        await using var second = await Inbox.ConnectAsync(transport);
        await Task.WhenAll(first.Client.SubscribeAsync("t", default), second.Client.SubscribeAsync("t", default)).WaitAsync(Patience);

        for (var n = 1; n <= Messages; n++)
        {
            await publisher.Client.PublishAsync("t", Encoding.UTF8.GetBytes($$"""{"n":{{n}},"text":"message {{n}}"}"""), default).WaitAsync(Patience);
        }

        await first.WaitForAsync(Messages);
        await second.WaitForAsync(Messages);
        var expected = Enumerable.Range(1, Messages).Select(n => $$"""{"n":{{n}},"text":"message {{n}}"}""");
        Assert.That(first.Received, Is.EqualTo(expected));
        Assert.That(second.Received, Is.EqualTo(expected));
    }

    [Test]
    public async Task LargePayload_ArrivesWhole()
    {
        // Larger than SignalR's 32 KiB default receive limit (AddSignalRPubSub raises it) and than one read.
        var large = $$"""{"items":[{{string.Join(',', Enumerable.Range(0, 5200).Select(i => $"\"item-{i:D4}\""))}}]}""";
        Assert.That(large, Has.Length.GreaterThan(60_000).And.Length.LessThan(SignalRPubSubServiceCollectionExtensions.MaxPayloadBytes));
        await using var server = await SignalRTestServer.StartAsync();
        await using var transport = server.CreateTransport(kind);
        await using var publisher = await Inbox.ConnectAsync(transport);
        await using var subscriber = await Inbox.ConnectAsync(transport);
        await subscriber.Client.SubscribeAsync("t", default).WaitAsync(Patience);

        await publisher.Client.PublishAsync("t", Encoding.UTF8.GetBytes(large), default).WaitAsync(Patience);
        await publisher.Client.PublishAsync("t", One, default).WaitAsync(Patience);

        await subscriber.WaitForAsync(2);
        Assert.That(subscriber.Received, Is.EqualTo(new[] { large, """{"n":1}""" }));
    }

    [Test]
    public async Task RejectedCall_FailsWithTheServersReason_AndTheClientStaysUsable()
    {
        await using var server = await SignalRTestServer.StartAsync();
        await using var transport = server.CreateTransport(kind);
        await using var client = await Inbox.ConnectAsync(transport);
        await using var other = await Inbox.ConnectAsync(transport);

        var emptyTopic = Assert.ThrowsAsync<HubException>(async () => await client.Client.PublishAsync(string.Empty, One, default).WaitAsync(Patience));
        var longTopic = Assert.ThrowsAsync<HubException>(async () => await client.Client.SubscribeAsync(new string('x', 257), default).WaitAsync(Patience));
        var notJson = Assert.ThrowsAsync<ArgumentException>(async () => await client.Client.PublishAsync("t", "{not json"u8.ToArray(), default).WaitAsync(Patience));

        Assert.That(emptyTopic!.Message, Does.Contain("A topic needs 1 to 256 characters").And.Contain("Publish"));
        Assert.That(longTopic!.Message, Does.Contain("A topic needs 1 to 256 characters").And.Contain("Subscribe"));
        Assert.That(notJson, Is.Not.Null);
        await client.Client.SubscribeAsync("t", default).WaitAsync(Patience);
        await other.Client.PublishAsync("t", One, default).WaitAsync(Patience);
        await client.WaitForAsync(1);
        await client.Client.PublishAsync("back", One, default).WaitAsync(Patience);
        Assert.That(client.Received, Is.EqualTo(new[] { """{"n":1}""" }));
    }

    [Test]
    public async Task SilentClient_OutlivesTheServersClientTimeout()
    {
        // A WebSocket client that stopped pinging would be dropped after 3 s here; the official client pings every
        // second. Over long polling it sends no pings: the server applies no client timeout, and the polls outlast
        // the 5 s poll timeout.
        var clientTimeout = TimeSpan.FromSeconds(3);
        await using var server = await SignalRTestServer.StartAsync(o =>
        {
            o.ClientTimeoutInterval = clientTimeout;
            o.KeepAliveInterval = TimeSpan.FromSeconds(1);
        });
        await using var transport = server.CreateTransport(kind, pingInterval: TimeSpan.FromSeconds(1));
        await using var listener = await Inbox.ConnectAsync(transport);
        await listener.Client.SubscribeAsync("t", default).WaitAsync(Patience);

        await Task.Delay(clientTimeout * 2 + TimeSpan.FromSeconds(1));
        await using (var publisher = await Inbox.ConnectAsync(transport))
        {
            await publisher.Client.PublishAsync("t", One, default).WaitAsync(Patience);
        }

        await listener.WaitForAsync(1);
        Assert.That(listener.Received, Is.EqualTo(new[] { """{"n":1}""" }));
        Assert.That(((SignalRClient)listener.Client).State, Is.EqualTo(HubConnectionState.Connected));
    }

    [Test]
    public async Task Dispose_FailsLaterCalls()
    {
        await using var server = await SignalRTestServer.StartAsync();
        await using var transport = server.CreateTransport(kind);
        var inbox = await Inbox.ConnectAsync(transport);
        await inbox.Client.SubscribeAsync("t", default).WaitAsync(Patience);

        await inbox.DisposeAsync().AsTask().WaitAsync(Patience);
        await inbox.DisposeAsync().AsTask().WaitAsync(Patience);

        Assert.ThrowsAsync<ObjectDisposedException>(async () => await inbox.Client.PublishAsync("t", One, default));
        Assert.That(((SignalRClient)inbox.Client).State, Is.EqualTo(HubConnectionState.Disconnected));
    }

    [Test]
    public async Task ServerStop_EndsTheClient_InsteadOfLeavingCallsHanging()
    {
        var server = await SignalRTestServer.StartAsync();
        await using var transport = server.CreateTransport(kind);
        await using var inbox = await Inbox.ConnectAsync(transport);
        await inbox.Client.SubscribeAsync("t", default).WaitAsync(Patience);
        var client = (SignalRClient)inbox.Client;

        await server.DisposeAsync();

        // A call either finds the connection ended or fails with it; either way it fails instead of hanging.
        Assert.CatchAsync<Exception>(async () => await inbox.Client.PublishAsync("t", One, default).WaitAsync(Patience));
        await WaitUntilAsync(() => client.State == HubConnectionState.Disconnected, "the client noticed that its connection ended");
        var later = Assert.CatchAsync<Exception>(async () => await inbox.Client.SubscribeAsync("t", default).WaitAsync(Patience));
        Assert.That(later, Is.Not.InstanceOf<TimeoutException>(), "a call on an ended connection fails at once");
    }

    // A client's next call completes only after everything the server wrote to it before, so one round trip on each
    // client proves no stray notification is still on its way: no sleep needed.
    private static Task RoundTripAsync(params Inbox[] inboxes) =>
        Task.WhenAll(inboxes.Select(i => i.Client.SubscribeAsync("round-trip", default))).WaitAsync(Patience);

    private static async Task WaitUntilAsync(Func<bool> condition, string description)
    {
        var started = Stopwatch.GetTimestamp();
        while (!condition())
        {
            if (Stopwatch.GetElapsedTime(started) > Patience)
            {
                Assert.Fail($"Still waiting after {Patience.TotalSeconds} s until {description}.");
            }

            await Task.Delay(10);
        }
    }

    /// <summary>A connected client and the notifications it has received, in order.</summary>
    private sealed class Inbox : IAsyncDisposable
    {
        private readonly ConcurrentQueue<string> _received = new();

        public IPubSubClient Client { get; private set; } = null!;

        public IReadOnlyList<string> Received => [.. _received];

        public static async Task<Inbox> ConnectAsync(SignalRTransport transport)
        {
            var inbox = new Inbox();
            inbox.Client = await transport.ConnectAsync(data => inbox._received.Enqueue(Encoding.UTF8.GetString(data)), default).WaitAsync(Patience);
            return inbox;
        }

        public Task WaitForAsync(int count) =>
            WaitUntilAsync(() => _received.Count >= count, $"{count} notifications arrived (so far {_received.Count})");

        public ValueTask DisposeAsync() => Client.DisposeAsync();
    }
}
