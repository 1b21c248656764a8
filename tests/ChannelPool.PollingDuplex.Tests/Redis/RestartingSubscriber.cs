using System.Net;
using System.Text;
using System.Text.Json;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// A subscriber written from the protocol document that restarts every few polls: it throws away its HTTP client and
/// its connections, and carries on from what it kept (session id, token, last sequence received), as a client process
/// that restarts with its state on disk would. Each restart's client goes through a fresh fault-injecting handler.
/// </summary>
internal sealed class RestartingSubscriber(Uri endpoint, string id, string token, int seed)
{
    public List<int> Received { get; } = [];

    public int Restarts { get; private set; }

    public static async Task<RestartingSubscriber> OpenAsync(HttpClient http, Uri endpoint, string topic, int seed)
    {
        var session = await RawSession.OpenAsync(http, endpoint);
        using var subscribed = await session.SendTextAsync($"{{\"seq\":1,\"data\":{{\"op\":\"subscribe\",\"topic\":\"{topic}\"}}}}\n");
        Assert.That(subscribed.StatusCode, Is.EqualTo(HttpStatusCode.OK));
        return new RestartingSubscriber(endpoint, session.Id, session.Token, seed);
    }

    /// <summary>Polls until <paramref name="count"/> messages have arrived, restarting every <paramref name="restartEvery"/> polls.</summary>
    public async Task ReadAsync(int count, int restartEvery, TimeSpan limit)
    {
        using var timeout = new CancellationTokenSource(limit);
        long last = 0;
        var polls = 0;
        HttpClient? http = null;
        try
        {
            while (Received.Count < count)
            {
                if (http is null || polls++ % restartEvery == restartEvery - 1)
                {
                    http?.Dispose();
                    http = DuplexCluster.CreateHttpClient(inner => new FaultInjectingHandler(inner, seed + Restarts) { DropRequestRate = 0.03, LoseResponseRate = 0.05, CutResponseRate = 0.1 });
                    Restarts++;
                }

                string body;
                try
                {
                    using var request = new HttpRequestMessage(HttpMethod.Get, new Uri($"{endpoint}/sessions/{id}/poll?ack={last}"));
                    request.Headers.Add(DuplexWire.SessionTokenHeader, token);
                    using var response = await http.SendAsync(request, timeout.Token);
                    if (response.StatusCode != HttpStatusCode.OK)
                    {
                        Assert.That((int)response.StatusCode, Is.EqualTo(204).Or.GreaterThanOrEqualTo(500), await response.Content.ReadAsStringAsync(timeout.Token));
                        continue;
                    }

                    body = await response.Content.ReadAsStringAsync(timeout.Token);
                }
                catch (Exception ex) when (ex is HttpRequestException or IOException)
                {
                    // A dropped request or a cut response: poll again with the same ack, and get the frames again.
                    continue;
                }

                foreach (var line in body.Split('\n', StringSplitOptions.RemoveEmptyEntries))
                {
                    using var frame = JsonDocument.Parse(Encoding.UTF8.GetBytes(line));
                    var seq = frame.RootElement.GetProperty("seq").GetInt64();
                    Assert.That(seq, Is.EqualTo(last + 1), "frames arrive in sequence, with nothing skipped or repeated");
                    Received.Add(frame.RootElement.GetProperty("data").GetProperty("data").GetInt32());
                    last = seq;
                }
            }
        }
        finally
        {
            http?.Dispose();
        }
    }
}
