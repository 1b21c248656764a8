using System.Buffers.Binary;
using System.Net;
using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.Tests;

public class DeliveryTests
{
    private static IEnumerable<TestCaseData> ModesAndEncodings()
    {
        foreach (var encoding in new[] { DuplexEncoding.Text, DuplexEncoding.Binary })
        {
            foreach (var mode in new[] { PollingDuplexMode.SingleMessagePerPoll, PollingDuplexMode.MultipleMessagesPerPoll })
            {
                foreach (var http2 in new[] { false, true })
                {
                    yield return new TestCaseData(encoding, mode, http2).SetName($"RoundTrip {encoding} {mode} {(http2 ? "HTTP/2" : "HTTP/1.1")}");
                }
            }
        }
    }

    [Test]
    public async Task ConcurrentCopiesOfOneSend_AreEachReceivedOnce_InOrder()
    {
        await using var server = await DuplexTestServer.StartAsync();
        using var http = DuplexTestServer.CreateHttpClient(HttpVersion.Version20);
        var session = await RawSession.OpenAsync(http, server.Duplex);
        var body = string.Concat(Enumerable.Range(1, 20).Select(i => $"{{\"seq\":{i},\"data\":{i}}}\n"));

        // As a client that retried a send whose response was lost, while the first copy is still being received.
        var responses = await Task.WhenAll(Enumerable.Range(0, 8).Select(_ => session.SendTextAsync(body))).Within();

        foreach (var response in responses)
        {
            using (response)
            {
                Assert.That(response.StatusCode, Is.EqualTo(HttpStatusCode.OK), await response.Content.ReadAsStringAsync());
                Assert.That(await response.Content.ReadAsStringAsync(), Is.EqualTo("{\"received\":20}"));
            }
        }

        Assert.That(server.Recorder.Received[session.Id].Select(m => m.ToString()), Is.EqualTo(Enumerable.Range(1, 20).Select(i => i.ToString(System.Globalization.CultureInfo.InvariantCulture))));
    }

    [TestCaseSource(nameof(ModesAndEncodings))]
    public async Task MessagesFlowBothWays_InOrder_InEveryModeAndEncoding(DuplexEncoding encoding, PollingDuplexMode mode, bool http2)
    {
        await using var server = await DuplexTestServer.StartAsync(o => o.MaxPendingMessagesPerSession = 512);
        using var http = DuplexTestServer.CreateHttpClient(http2 ? HttpVersion.Version20 : HttpVersion.Version11);
        var client = new PollingDuplexClient(http, server.Duplex, new PollingDuplexClientOptions { Encoding = encoding, Mode = mode });
        await using var session = await client.OpenSessionAsync().Within();
        var onServer = server.Recorder.Sessions[session.Id];

        for (var i = 1; i <= 300; i++)
        {
            Assert.That(onServer.Send(Message(encoding, i)), Is.EqualTo(DuplexSendResult.Queued));
        }

        var received = await ReadAsync(session, 300);
        for (var i = 1; i <= 100; i += 10)
        {
            await session.SendAsync([.. Enumerable.Range(i, 10).Select(n => Message(encoding, n))]).AsTask().Within();
        }

        Assert.That(received.Select(d => d.Sequence), Is.EqualTo(Enumerable.Range(1, 300).Select(i => (long)i)));
        Assert.That(received.Select(d => Value(encoding, d.Message!)), Is.EqualTo(Enumerable.Range(1, 300)));
        Assert.That(server.Recorder.Received[session.Id].Select(m => Value(encoding, m)), Is.EqualTo(Enumerable.Range(1, 100)));
        Assert.That(onServer.Encoding, Is.EqualTo(encoding));
        Assert.That(onServer.Mode, Is.EqualTo(mode));
    }

    [TestCase(DuplexEncoding.Text)]
    [TestCase(DuplexEncoding.Binary)]
    public async Task ThousandsOfMessages_ArriveExactlyOnceInOrder_WhileResponsesAndConnectionsAreLost(DuplexEncoding encoding)
    {
        const int ToClient = 3000;
        const int ToServer = 2000;
        await using var server = await DuplexTestServer.StartAsync(o =>
        {
            o.MaxPendingMessagesPerSession = ToClient + 10;
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(500);
            o.BatchWindow = TimeSpan.FromMilliseconds(2);
        });
        FaultInjectingHandler? faults = null;
        using var http = DuplexTestServer.CreateHttpClient(wrap: inner => faults = new FaultInjectingHandler(inner, seed: 20261120)
        {
            DropRequestRate = 0.05,
            LoseResponseRate = 0.1,
            CutResponseRate = 0.1,
        });
        var client = new PollingDuplexClient(http, server.Duplex, new PollingDuplexClientOptions
        {
            Encoding = encoding,
            MaxRetryAttempts = 50,
            RetryBaseDelay = TimeSpan.FromMilliseconds(1),
            RetryMaxDelay = TimeSpan.FromMilliseconds(20),
        });
        var session = await OpenDespiteFaultsAsync(client);
        var onServer = server.Recorder.Sessions[session.Id];

        var reading = ReadAsync(session, ToClient, TimeSpan.FromMinutes(2));
        var pusher = Task.Run(async () =>
        {
            // In waves, each waited for: many poll responses, so many chances for the injected faults to hit.
            for (var i = 1; i <= ToClient; i++)
            {
                Assert.That(onServer.Send(Message(encoding, i)), Is.EqualTo(DuplexSendResult.Queued));
                if (i % 20 == 0)
                {
                    var wave = i;
                    await Eventually.That(() => session.LastReceivedSequence >= wave, $"wave {wave / 20} arrived");
                }
            }
        });
        var sender = Task.Run(async () =>
        {
            var random = new Random(7);
            for (var next = 1; next <= ToServer;)
            {
                var count = Math.Min(random.Next(1, 20), ToServer - next + 1);
                await session.SendAsync([.. Enumerable.Range(next, count).Select(n => Message(encoding, n))]);
                next += count;
            }
        });
        var received = await reading;
        await Task.WhenAll(pusher, sender).WaitAsync(TimeSpan.FromMinutes(2));

        Assert.That(received.Select(d => Value(encoding, d.Message!)), Is.EqualTo(Enumerable.Range(1, ToClient)), "every server message once, in order");
        Assert.That(server.Recorder.Received[session.Id].Select(m => Value(encoding, m)), Is.EqualTo(Enumerable.Range(1, ToServer)), "every client message once, in order");
        // Not vacuous: every kind of fault happened, several times over (hundreds of requests at these rates).
        Assert.That(faults!.DroppedRequests, Is.GreaterThan(0), "requests were dropped");
        Assert.That(faults.LostResponses, Is.GreaterThan(0), "responses were lost after the server acted");
        Assert.That(faults.CutResponses, Is.GreaterThan(0), "poll responses were cut off mid-body");
        Assert.That(faults.DroppedRequests + faults.LostResponses + faults.CutResponses, Is.GreaterThanOrEqualTo(10));
        await session.CloseAsync().Within();
    }

    internal static DuplexMessage Message(DuplexEncoding encoding, int value)
    {
        if (encoding == DuplexEncoding.Text)
        {
            return DuplexMessage.FromJson(new { value });
        }

        var bytes = new byte[4];
        BinaryPrimitives.WriteInt32BigEndian(bytes, value);
        return DuplexMessage.FromBytes(bytes);
    }

    internal static int Value(DuplexEncoding encoding, DuplexMessage message) =>
        encoding == DuplexEncoding.Text
            ? System.Text.Json.JsonDocument.Parse(message.Payload).RootElement.GetProperty("value").GetInt32()
            : BinaryPrimitives.ReadInt32BigEndian(message.Payload.Span);

    internal static async Task<List<DuplexDelivery>> ReadAsync(DuplexClientSession session, int count, TimeSpan? limit = null)
    {
        var received = new List<DuplexDelivery>(count);
        using var timeout = new CancellationTokenSource(limit ?? Eventually.Limit);
        await foreach (var delivery in session.ReadAllAsync(timeout.Token))
        {
            received.Add(delivery);
            if (received.Count == count)
            {
                break;
            }
        }

        return received;
    }

    private static async Task<DuplexClientSession> OpenDespiteFaultsAsync(PollingDuplexClient client)
    {
        // Opening is not idempotent, so the client does not retry it (a pool's open pipeline would); the test does.
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                return await client.OpenSessionAsync();
            }
            catch (HttpRequestException) when (attempt < 20)
            {
            }
        }
    }
}
