using System.Diagnostics;
using System.Text.Json;
using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.BrowserHost;

/// <summary>
/// The .NET client's side of the browser client's measurements (clients/polling-duplex/perf): the same flood and the
/// same publish-to-receipt loop, against the same server, from a process of its own as the browser is. Prints one JSON line.
/// </summary>
internal static class DotNetClientMeasurement
{
    public static async Task<int> ThroughputAsync(string[] args)
    {
        var settings = Settings(args);
        var url = new Uri(settings["Url"]!);
        var encoding = Encoding(settings);
        var seconds = settings.GetValue("Seconds", 5.0);
        var streams = settings.GetValue("Streams", 4);
        var size = settings.GetValue("Size", 256);
        using var http = CreateHttpClient();
        var client = new PollingDuplexClient(http, new Uri(url, "flood"), new PollingDuplexClientOptions { Encoding = encoding, Mode = PollingDuplexMode.MultipleMessagesPerPoll });
        long count = 0;
        using var stop = new CancellationTokenSource();
        var sessions = await Task.WhenAll(Enumerable.Range(0, streams).Select(_ => client.OpenSessionAsync()));
        var readers = sessions.Select(session => Task.Run(async () =>
        {
            await session.SendAsync(DuplexMessage.FromJson(new { size }));
            try
            {
                await foreach (var item in session.ReadAllAsync(stop.Token))
                {
                    if (item.Message?.Payload.Length == size)
                    {
                        Interlocked.Increment(ref count);
                    }
                }
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested)
            {
            }
        })).ToArray();

        // One second of warm-up, then the measured window: as the browser side does.
        await Task.Delay(TimeSpan.FromSeconds(1));
        var before = Interlocked.Read(ref count);
        var started = Stopwatch.GetTimestamp();
        await Task.Delay(TimeSpan.FromSeconds(seconds));
        var messages = Interlocked.Read(ref count) - before;
        var elapsed = Stopwatch.GetElapsedTime(started).TotalSeconds;
        await stop.CancelAsync();
        await Task.WhenAll(readers);
        await Task.WhenAll(sessions.Select(s => s.CloseAsync()));
        Console.WriteLine(JsonSerializer.Serialize(new { messages, seconds = elapsed, messagesPerSecond = messages / elapsed }));
        return 0;
    }

    public static async Task<int> LatencyAsync(string[] args)
    {
        var settings = Settings(args);
        var url = new Uri(settings["Url"]!);
        var encoding = Encoding(settings);
        var samples = settings.GetValue("Samples", 500);
        var interval = TimeSpan.FromMilliseconds(settings.GetValue("IntervalMs", 20));
        using var http = CreateHttpClient();
        var client = new PollingDuplexClient(http, new Uri(url, "pubsub"), new PollingDuplexClientOptions { Encoding = encoding, Mode = PollingDuplexMode.MultipleMessagesPerPoll });
        await using var subscriber = await client.OpenSessionAsync();
        await using var publisher = await client.OpenSessionAsync();
        var topic = $"latency-{Guid.NewGuid():N}";
        await subscriber.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic }));
        var latencies = new List<double>(samples);
        for (var i = 0; i < samples + 20; i++)
        {
            var started = Stopwatch.GetTimestamp();
            await publisher.SendAsync(DuplexMessage.FromJson(new { op = "publish", topic, data = i }));
            await subscriber.ReceiveAsync();
            var ms = Stopwatch.GetElapsedTime(started).TotalMilliseconds;
            if (i >= 20)
            {
                // The first 20 warm the connections and the JIT up.
                latencies.Add(ms);
            }

            await Task.Delay(interval);
        }

        latencies.Sort();
        Console.WriteLine(JsonSerializer.Serialize(new { samples = latencies.Count, p50 = Percentile(latencies, 0.50), p99 = Percentile(latencies, 0.99), mean = latencies.Average() }));
        return 0;
    }

    private static double Percentile(List<double> sorted, double p) => sorted[Math.Min(sorted.Count - 1, (int)Math.Ceiling(p * sorted.Count) - 1)];

    private static DuplexEncoding Encoding(IConfiguration settings) =>
        string.Equals(settings["Encoding"], "text", StringComparison.OrdinalIgnoreCase) ? DuplexEncoding.Text : DuplexEncoding.Binary;

    private static IConfiguration Settings(string[] args) => new ConfigurationBuilder().AddCommandLine(args).Build();

    private static HttpClient CreateHttpClient() => new(new SocketsHttpHandler { MaxConnectionsPerServer = int.MaxValue })
    {
        Timeout = Timeout.InfiniteTimeSpan,
    };
}
