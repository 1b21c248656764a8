using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary><see cref="DuplexSession.SendAsync"/>: a producer that waits for the client instead of overflowing.</summary>
public class BackpressureTests
{
    [Test]
    public async Task SendAsync_WaitsForRoom_SoAProducerFasterThanTheClientLosesNothing([Values] PollingDuplexMode mode)
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.MaxPendingMessagesPerSession = 4);
        using var http = DuplexTestServer.CreateHttpClient();
        var client = new PollingDuplexClient(http, server.Duplex, new PollingDuplexClientOptions { Mode = mode });
        await using var session = await client.OpenSessionAsync().Within();
        var onServer = server.Recorder.Sessions[session.Id];
        const int Count = 300;

        var producer = Task.Run(async () =>
        {
            var results = new List<DuplexSendResult>();
            for (var i = 1; i <= Count; i++)
            {
                results.Add(await onServer.SendAsync(DeliveryTests.Message(DuplexEncoding.Binary, i)));
            }

            return results;
        });

        var received = new List<int>();
        using var timeout = new CancellationTokenSource(Eventually.Limit);
        await foreach (var delivery in session.ReadAllAsync(timeout.Token))
        {
            Assert.That(delivery.IsGap, Is.False, "nothing may be dropped");
            received.Add(DeliveryTests.Value(DuplexEncoding.Binary, delivery.Message!));
            if (received.Count == Count)
            {
                break;
            }
        }

        Assert.That(await producer.Within(), Is.All.EqualTo(DuplexSendResult.Queued), "waiting replaces the overflow policy: the session never faulted");
        Assert.That(received, Is.EqualTo(Enumerable.Range(1, Count)));
        Assert.That(onServer.EndReason, Is.Null);
    }

    [Test]
    public async Task SendAsync_ReturnsSessionEnded_WhenTheSessionEndsWhileItWaits()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.MaxPendingMessagesPerSession = 2);
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);
        var onServer = server.Recorder.Sessions[session.Id];
        Assert.That(await onServer.SendAsync(DuplexMessage.FromJson(1)), Is.EqualTo(DuplexSendResult.Queued));
        Assert.That(await onServer.SendAsync(DuplexMessage.FromJson(2)), Is.EqualTo(DuplexSendResult.Queued));

        var waiting = onServer.SendAsync(DuplexMessage.FromJson(3)).AsTask();
        Assert.That(waiting.IsCompleted, Is.False, "no poll has taken a message, so there is no room");
        onServer.Close();

        Assert.That(await waiting.Within(), Is.EqualTo(DuplexSendResult.SessionEnded));
    }

    [Test]
    public async Task SendAsync_Cancelled_LeavesTheMessageUnqueued_AndTheSessionWorking()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.MaxPendingMessagesPerSession = 1);
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);
        var onServer = server.Recorder.Sessions[session.Id];
        Assert.That(await onServer.SendAsync(DuplexMessage.FromJson(1)), Is.EqualTo(DuplexSendResult.Queued));

        using var cancel = new CancellationTokenSource();
        var waiting = onServer.SendAsync(DuplexMessage.FromJson(2), cancel.Token).AsTask();
        await cancel.CancelAsync();

        Assert.That(async () => await waiting, Throws.InstanceOf<OperationCanceledException>());
        using var polled = await session.PollAsync(0);
        var body = await polled.Content.ReadAsStringAsync();
        Assert.That(body, Does.Contain("\"seq\":1").And.Not.Contain("\"seq\":2"), "the cancelled message was never queued");
        Assert.That(onServer.EndReason, Is.Null);
        Assert.That(await onServer.SendAsync(DuplexMessage.FromJson(3)).AsTask().Within(), Is.EqualTo(DuplexSendResult.Queued), "the poll made room");
    }

    [Test]
    public async Task Sends_RefuseWhatTheClientWouldReject_WithAMessageThatSaysWhy()
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.MaxMessageSize = 64);
        using var http = DuplexTestServer.CreateHttpClient();
        var binary = await RawSession.OpenAsync(http, server.Duplex, "binary");
        var text = await RawSession.OpenAsync(http, server.Duplex, "text");
        var onServer = server.Recorder.Sessions[binary.Id];

        Assert.That(
            async () => await onServer.SendAsync(DuplexMessage.FromBytes(new byte[65])),
            Throws.ArgumentException.With.Message.Contains("65-byte message").And.Message.Contains("MaxMessageSize"));
        Assert.That(
            () => onServer.Send(DuplexMessage.FromBytes(new byte[65])),
            Throws.ArgumentException.With.Message.Contains("65-byte message").And.Message.Contains("MaxMessageSize"));
        Assert.That(
            async () => await server.Recorder.Sessions[text.Id].SendAsync(DuplexMessage.FromBytes(new byte[4])),
            Throws.ArgumentException.With.Message.Contains("text encoding"));
        Assert.That(await onServer.SendAsync(DuplexMessage.FromBytes(new byte[64])), Is.EqualTo(DuplexSendResult.Queued), "the session still works");
        Assert.That(onServer.EndReason, Is.Null);
    }
}
