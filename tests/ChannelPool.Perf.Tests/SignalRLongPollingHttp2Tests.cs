using System.Collections.Concurrent;
using System.Net;
using System.Text;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Peers.SignalR;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace ChannelPool.Perf.Tests;

/// <summary>
/// The broadcast's <c>--http 2</c> runs SignalR long polling over h2c; these pin that its requests really are HTTP/2,
/// against a listener that speaks nothing else, so a fallback to HTTP/1.1 fails instead of passing unnoticed.
/// </summary>
internal sealed class SignalRLongPollingHttp2Tests
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    [Test]
    public async Task LongPolling_AskedForHttp2_DeliversThroughAListenerThatSpeaksOnlyHttp2()
    {
        await using var server = await SignalRTestServer.StartAsync(protocols: HttpProtocols.Http2);
        await using var transport = server.CreateTransport(SignalRTransportKind.LongPolling, httpVersion: HttpVersion.Version20);
        var received = new ConcurrentQueue<string>();
        var arrived = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var subscriber = await transport.ConnectAsync(
            data =>
            {
                received.Enqueue(Encoding.UTF8.GetString(data));
                arrived.TrySetResult();
            },
            default).WaitAsync(Patience);
        await using var publisher = await transport.ConnectAsync(static _ => { }, default).WaitAsync(Patience);
        await subscriber.SubscribeAsync("t", default).WaitAsync(Patience);

        await publisher.PublishAsync("t", """{"n":1}"""u8.ToArray(), default).WaitAsync(Patience);
        await arrived.Task.WaitAsync(Patience);

        Assert.That(received, Is.EqualTo(new[] { """{"n":1}""" }));
        Assert.That(transport.Protocol, Is.EqualTo(ClientProtocol.Http2));
        Assert.That(transport.Name, Is.EqualTo("signalr-longpolling (HTTP/2)"), "a report tells the HTTP/2 row from the HTTP/1.1 one");
    }

    [Test]
    public async Task LongPolling_OnHttp11_CannotReachAnHttp2OnlyListener()
    {
        // The control for the test above: the listener really refuses HTTP/1.1, so delivering through it proves HTTP/2.
        await using var server = await SignalRTestServer.StartAsync(protocols: HttpProtocols.Http2);
        await using var transport = server.CreateTransport(SignalRTransportKind.LongPolling);

        Assert.CatchAsync<Exception>(async () => await (await transport.ConnectAsync(static _ => { }, default).WaitAsync(Patience)).DisposeAsync());
        Assert.That(transport.Protocol, Is.EqualTo(ClientProtocol.Http11));
    }
}
