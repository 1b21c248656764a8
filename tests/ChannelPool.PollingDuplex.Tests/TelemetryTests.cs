using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.Tests;

public class TelemetryTests
{
    [Test]
    public async Task Metrics_CountSessionsPollsDeliveriesRedeliveriesAndReceipts_TaggedWithTheEndpoint()
    {
        using var measured = new EndpointMetrics("/duplex");

        await using var server = await DuplexTestServer.StartAsync(o => o.MaxPendingMessagesPerSession = 64);
        using var http = DuplexTestServer.CreateHttpClient();
        var session = await RawSession.OpenAsync(http, server.Duplex);
        for (var i = 0; i < 3; i++)
        {
            server.Recorder.Sessions[session.Id].Send(DuplexMessage.FromJson(i));
        }

        using (await session.PollAsync(0))
        {
        }

        using (await session.PollAsync(0))
        {
            // Not acknowledged: the same three frames again.
        }

        using (await session.SendTextAsync("{\"seq\":1,\"data\":1}\n{\"seq\":2,\"data\":2}\n"))
        {
        }

        using (await session.CloseAsync())
        {
        }

        await Eventually.That(() => measured["pollingduplex.sessions.ended"] == 1, "the close was counted");
        Assert.That(measured["pollingduplex.sessions.opened"], Is.EqualTo(1));
        Assert.That(measured["pollingduplex.polls"], Is.EqualTo(2));
        Assert.That(measured["pollingduplex.messages.delivered"], Is.EqualTo(3));
        Assert.That(measured["pollingduplex.messages.redelivered"], Is.EqualTo(3));
        Assert.That(measured["pollingduplex.messages.received"], Is.EqualTo(2));
    }
}
