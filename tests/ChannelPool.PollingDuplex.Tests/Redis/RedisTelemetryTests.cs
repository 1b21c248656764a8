using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using System.Net;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>What the endpoint code records, it records for the Redis store too: the same instruments, the same tags.</summary>
public class RedisTelemetryTests
{
    [Test]
    public async Task RedisEndpoints_CountPollsByOutcome_AndReceivedMessages_TaggedWithTheEndpoint()
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
            var endpoint = false;
            string? outcome = null;
            foreach (var tag in tags)
            {
                endpoint |= tag.Key == PollingDuplexTelemetry.EndpointTag && Equals(tag.Value, "/pubsub");
                outcome = tag.Key == "pollingduplex.poll.outcome" ? (string?)tag.Value : outcome;
            }

            if (endpoint)
            {
                measured.AddOrUpdate(outcome is null ? instrument.Name : $"{instrument.Name} {outcome}", value, (_, total) => total + value);
            }
        });
        listener.Start();

        await using var cluster = await DuplexCluster.StartAsync(configure: o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(200));
        using var http = DuplexCluster.CreateHttpClient();
        var subscriber = await RawSession.OpenAsync(http, cluster.PubSub);
        using (await subscriber.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"t\"}}\n"))
        {
        }

        using (var empty = await subscriber.PollAsync(0))
        {
            Assert.That(empty.StatusCode, Is.EqualTo(HttpStatusCode.NoContent));
        }

        var publisher = await RawSession.OpenAsync(http, cluster.PubSub);
        using (await publisher.SendTextAsync("{\"seq\":1,\"data\":{\"op\":\"publish\",\"topic\":\"t\",\"data\":1}}\n"))
        {
        }

        using (var delivered = await subscriber.PollAsync(0))
        {
            Assert.That(delivered.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        }

        await Eventually.That(() => measured.GetValueOrDefault("pollingduplex.polls messages") == 1, () => $"the delivering poll was counted: {string.Join(", ", measured)}");
        Assert.That(measured.GetValueOrDefault("pollingduplex.polls empty"), Is.EqualTo(1));
        Assert.That(measured.GetValueOrDefault("pollingduplex.messages.received"), Is.EqualTo(2), "the subscribe and the publish");
    }
}
