using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.Tests;

public class TelemetryTests
{
    [Test]
    public async Task Metrics_CountSessionsPollsDeliveriesRedeliveriesAndReceipts_TaggedWithTheEndpoint()
    {
        var measured = new ConcurrentDictionary<string, long>();
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, l) =>
            {
                if (instrument.Meter.Name == PollingDuplexTelemetry.MeterName)
                {
                    l.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            foreach (var tag in tags)
            {
                if (tag.Key == PollingDuplexTelemetry.EndpointTag && Equals(tag.Value, "/duplex"))
                {
                    measured.AddOrUpdate(instrument.Name, value, (_, total) => total + value);
                }
            }
        });
        listener.Start();

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

        await Eventually.That(() => measured.GetValueOrDefault("pollingduplex.sessions.ended") == 1, "the close was counted");
        Assert.That(measured.GetValueOrDefault("pollingduplex.sessions.opened"), Is.EqualTo(1));
        Assert.That(measured.GetValueOrDefault("pollingduplex.polls"), Is.EqualTo(2));
        Assert.That(measured.GetValueOrDefault("pollingduplex.messages.delivered"), Is.EqualTo(3));
        Assert.That(measured.GetValueOrDefault("pollingduplex.messages.redelivered"), Is.EqualTo(3));
        Assert.That(measured.GetValueOrDefault("pollingduplex.messages.received"), Is.EqualTo(2));
    }
}
