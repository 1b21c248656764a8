using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Text.Json;
using ChannelPool.Perf.Stats;
using ChannelPool.PollingDuplex;
using ChannelPool.PollingDuplex.Client;
using ChannelPool.Testing.PollingDuplex;
using ChannelPool.Testing.Redis;
using Spectre.Console;
using StackExchange.Redis;

namespace ChannelPool.Perf.Scenarios.Redis;

/// <summary>
/// The Redis store against the in-memory store, and 1 node against 3 behind a round-robin balancer, for the same work:
/// a broadcast (M clients on one topic, a burst every second), a collaboration (rooms of N, each member publishing in
/// turn), and the Redis commands one publish and one delivery cost. It starts its own redis-server and nodes.
/// </summary>
internal sealed class RedisRun(PerfContext context, RedisSettings settings)
{
    public async Task<RedisResults> RunAsync(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync();
        var stores = new List<RedisStoreResult>();
        foreach (var (name, nodes, onRedis) in new[] { ("in-memory, 1 node", 1, false), ("Redis, 1 node", 1, true), ("Redis, 3 nodes + YARP", 3, true) })
        {
            await using var cluster = await DuplexCluster.StartAsync(new DuplexClusterOptions { Nodes = nodes, Redis = onRedis ? redis.Configuration : null });
            using var http = Http();
            var cpu = Process.GetCurrentProcess().TotalProcessorTime;
            var broadcast = await BroadcastAsync(http, cluster.PubSub, settings.Clients, settings.Bursts, cancellationToken);
            var cpuPerDelivery = (Process.GetCurrentProcess().TotalProcessorTime - cpu).TotalMicroseconds / Math.Max(1, broadcast.Deliveries);
            var collaboration = await CollaborationAsync(http, cluster.PubSub, settings.Rooms, settings.Members, settings.Rounds, cancellationToken);
            stores.Add(new RedisStoreResult(name, settings.Clients, settings.Bursts, broadcast.OnTime, broadcast.WorstMs, broadcast.Latency, collaboration, cpuPerDelivery));
            context.Console.MarkupLine($"[grey]{Markup.Escape(name)}: done[/]");
        }

        return new RedisResults(stores, await CountRedisCommandsAsync(redis, cancellationToken));
    }

    private sealed record BroadcastOutcome(int OnTime, double WorstMs, LatencySummary Latency, long Deliveries);

    private static async Task<BroadcastOutcome> BroadcastAsync(HttpClient http, Uri endpoint, int clients, int bursts, CancellationToken cancellationToken)
    {
        var client = new PollingDuplexClient(http, endpoint, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Binary, MaxRetryAttempts = 5 });
        var published = new long[bursts + 1];
        var lastArrival = new long[bursts + 1];
        var arrived = new int[bursts + 1];
        var latency = new LatencyRecorder();
        using var gate = new SemaphoreSlim(64);
        var sessions = await Task.WhenAll(Enumerable.Range(0, clients).Select(async _ =>
        {
            await gate.WaitAsync(cancellationToken);
            try
            {
                var session = await client.OpenSessionAsync(cancellationToken);
                await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = "broadcast" }), cancellationToken);
                return session;
            }
            finally
            {
                gate.Release();
            }
        }));
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var readers = sessions.Select(s => Task.Run(async () =>
        {
            try
            {
                await foreach (var delivery in s.ReadAllAsync(stop.Token))
                {
                    var now = Stopwatch.GetTimestamp();
                    var burst = Data(delivery.Message!);
                    latency.Record(now - Volatile.Read(ref published[burst]));
                    Interlocked.Increment(ref arrived[burst]);
                    InterlockedMax(ref lastArrival[burst], now);
                }
            }
            catch (OperationCanceledException)
            {
            }
        })).ToList();

        await using var publisher = await client.OpenSessionAsync(cancellationToken);
        var start = Stopwatch.GetTimestamp();
        for (var burst = 1; burst <= bursts; burst++)
        {
            var due = start + (long)((burst - 1) * Stopwatch.Frequency);
            if (due > Stopwatch.GetTimestamp())
            {
                await Task.Delay(Stopwatch.GetElapsedTime(Stopwatch.GetTimestamp(), due), cancellationToken);
            }

            Volatile.Write(ref published[burst], Stopwatch.GetTimestamp());
            await publisher.SendAsync(DuplexMessage.FromJson(new { op = "publish", topic = "broadcast", data = burst }), cancellationToken);
        }

        var deadline = Stopwatch.GetTimestamp() + 10 * Stopwatch.Frequency;
        while (Enumerable.Range(1, bursts).Any(b => Volatile.Read(ref arrived[b]) < clients) && Stopwatch.GetTimestamp() < deadline)
        {
            await Task.Delay(50, cancellationToken);
        }

        await stop.CancelAsync();
        await Task.WhenAll(readers);
        await Task.WhenAll(sessions.Select(s => s.DisposeAsync().AsTask()));
        var onTime = 0;
        var worst = 0.0;
        for (var b = 1; b <= bursts; b++)
        {
            var ms = arrived[b] < clients ? double.PositiveInfinity : Stopwatch.GetElapsedTime(published[b], lastArrival[b]).TotalMilliseconds;
            worst = Math.Max(worst, ms);
            onTime += ms < 1000 ? 1 : 0;
        }

        return new BroadcastOutcome(onTime, worst, latency.Summarize(), arrived.Sum());
    }

    private static async Task<LatencySummary> CollaborationAsync(HttpClient http, Uri endpoint, int rooms, int perTopic, int rounds, CancellationToken cancellationToken)
    {
        var client = new PollingDuplexClient(http, endpoint, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Text, MaxRetryAttempts = 5 });
        var latency = new LatencyRecorder();
        using var gate = new SemaphoreSlim(64);
        var members = await Task.WhenAll(Enumerable.Range(0, rooms * perTopic).Select(async i =>
        {
            await gate.WaitAsync(cancellationToken);
            try
            {
                var session = await client.OpenSessionAsync(cancellationToken);
                await session.SendAsync(DuplexMessage.FromJson(new { op = "subscribe", topic = $"room-{i / perTopic}" }), cancellationToken);
                return session;
            }
            finally
            {
                gate.Release();
            }
        }));
        var expected = rooms * rounds * (perTopic - 1);
        var received = 0;
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var readers = members.Select(s => Task.Run(async () =>
        {
            try
            {
                await foreach (var delivery in s.ReadAllAsync(stop.Token))
                {
                    latency.Record(Stopwatch.GetTimestamp() - Data(delivery.Message!));
                    Interlocked.Increment(ref received);
                }
            }
            catch (OperationCanceledException)
            {
            }
        })).ToList();

        for (var round = 0; round < rounds; round++)
        {
            var tick = Task.Delay(1000, cancellationToken);
            await Task.WhenAll(Enumerable.Range(0, rooms).Select(room =>
                members[(room * perTopic) + (round % perTopic)].SendAsync(DuplexMessage.FromJson(new { op = "publish", topic = $"room-{room}", data = Stopwatch.GetTimestamp() }), cancellationToken).AsTask()));
            await tick;
        }

        var deadline = Stopwatch.GetTimestamp() + 10 * Stopwatch.Frequency;
        while (Volatile.Read(ref received) < expected && Stopwatch.GetTimestamp() < deadline)
        {
            await Task.Delay(50, cancellationToken);
        }

        await stop.CancelAsync();
        await Task.WhenAll(readers);
        await Task.WhenAll(members.Select(s => s.DisposeAsync().AsTask()));
        return latency.Summarize();
    }

    /// <summary>Counts what Redis runs for one publish to N subscribers with no poll outstanding, then for delivering it.</summary>
    private async Task<IReadOnlyList<RedisCommandCount>> CountRedisCommandsAsync(RedisServerProcess redis, CancellationToken cancellationToken)
    {
        const int Publishes = RedisSettings.PublishesPerCount;
        var counts = new List<RedisCommandCount>();
        await using var cluster = await DuplexCluster.StartAsync(new DuplexClusterOptions { Redis = redis.Configuration, Configure = o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(100) });
        using var http = Http();
        using var admin = await ConnectionMultiplexer.ConnectAsync(redis.Configuration + ",allowAdmin=true");
        var server = admin.GetServer(admin.GetEndPoints()[0]);
        foreach (var n in settings.SubscriberCounts)
        {
            var subscribers = new List<(string Id, string Token)>();
            for (var i = 0; i < n; i++)
            {
                var (id, token) = await OpenRawAsync(http, cluster.PubSub, cancellationToken);
                await SendRawAsync(http, cluster.PubSub, id, token, "{\"seq\":1,\"data\":{\"op\":\"subscribe\",\"topic\":\"count\"}}\n", cancellationToken);
                subscribers.Add((id, token));
            }

            var (pid, ptoken) = await OpenRawAsync(http, cluster.PubSub, cancellationToken);
            await server.ConfigResetStatisticsAsync();
            var cpuBefore = await RedisCpuAsync(server);
            for (var i = 1; i <= Publishes; i++)
            {
                await SendRawAsync(http, cluster.PubSub, pid, ptoken, $"{{\"seq\":{i},\"data\":{{\"op\":\"publish\",\"topic\":\"count\",\"data\":{i}}}}}\n", cancellationToken);
            }

            var publishCpu = await RedisCpuAsync(server) - cpuBefore;
            var (publishTrips, publishCommands) = await CommandStatsAsync(server);
            await server.ConfigResetStatisticsAsync();
            cpuBefore = await RedisCpuAsync(server);
            foreach (var (id, token) in subscribers)
            {
                using var poll = await RawAsync(http, HttpMethod.Get, new Uri($"{cluster.PubSub}/sessions/{id}/poll?ack=0"), token, null, cancellationToken);
                await poll.Content.ReadAsByteArrayAsync(cancellationToken);
            }

            var deliveryCpu = await RedisCpuAsync(server) - cpuBefore;
            var (deliveryTrips, deliveryCommands) = await CommandStatsAsync(server);
            double frames = n * Publishes;
            counts.Add(new RedisCommandCount(
                n,
                (double)publishTrips / Publishes,
                (double)publishCommands / Publishes,
                (double)publishCommands / Publishes / n,
                publishCpu.TotalMicroseconds / Publishes,
                deliveryTrips / frames,
                deliveryCommands / frames,
                deliveryCpu.TotalMicroseconds / frames));
        }

        return counts;
    }

    /// <summary>Redis's own processor time so far (user + system), from INFO cpu: what the server spent, whoever asked.</summary>
    private static async Task<TimeSpan> RedisCpuAsync(IServer server)
    {
        var cpu = (await server.InfoAsync("cpu")).SelectMany(g => g).ToDictionary(p => p.Key, p => p.Value);
        return TimeSpan.FromSeconds(double.Parse(cpu["used_cpu_user"], CultureInfo.InvariantCulture) + double.Parse(cpu["used_cpu_sys"], CultureInfo.InvariantCulture));
    }

    private static async Task<(long RoundTrips, long Commands)> CommandStatsAsync(IServer server)
    {
        var stats = await server.InfoAsync("commandstats");
        long trips = 0, commands = 0;
        foreach (var pair in stats.SelectMany(g => g))
        {
            // cmdstat_evalsha:calls=12,usec=...
            var calls = long.Parse(pair.Value.Split(',')[0].Split('=')[1], CultureInfo.InvariantCulture);
            if (pair.Key is "cmdstat_info" or "cmdstat_config|resetstat")
            {
                continue;
            }

            commands += calls;
            trips += pair.Key is "cmdstat_evalsha" or "cmdstat_eval" or "cmdstat_script|load" ? calls : 0;
        }

        return (trips, commands);
    }

    private static async Task<(string Id, string Token)> OpenRawAsync(HttpClient http, Uri endpoint, CancellationToken cancellationToken)
    {
        using var response = await http.PostAsync(new Uri(endpoint + "/sessions"), new StringContent("{\"mode\":\"multiple\"}", Encoding.UTF8, "application/json"), cancellationToken);
        response.EnsureSuccessStatusCode();
        using var json = JsonDocument.Parse(await response.Content.ReadAsStringAsync(cancellationToken));
        return (json.RootElement.GetProperty("sessionId").GetString()!, json.RootElement.GetProperty("token").GetString()!);
    }

    private static async Task SendRawAsync(HttpClient http, Uri endpoint, string id, string token, string ndjson, CancellationToken cancellationToken)
    {
        using var response = await RawAsync(http, HttpMethod.Post, new Uri($"{endpoint}/sessions/{id}/messages"), token, new StringContent(ndjson, Encoding.UTF8, "application/x-ndjson"), cancellationToken);
        response.EnsureSuccessStatusCode();
    }

    private static Task<HttpResponseMessage> RawAsync(HttpClient http, HttpMethod method, Uri uri, string token, HttpContent? content, CancellationToken cancellationToken)
    {
        var request = new HttpRequestMessage(method, uri) { Content = content };
        request.Headers.Add(DuplexWire.SessionTokenHeader, token);
        return http.SendAsync(request, cancellationToken);
    }

    private static HttpClient Http() => new(new SocketsHttpHandler { MaxConnectionsPerServer = int.MaxValue, PooledConnectionIdleTimeout = TimeSpan.FromMinutes(1) }) { Timeout = Timeout.InfiniteTimeSpan };

    private static long Data(DuplexMessage message)
    {
        using var json = JsonDocument.Parse(message.Payload);
        return json.RootElement.GetProperty("data").GetInt64();
    }

    private static void InterlockedMax(ref long target, long value)
    {
        var current = Volatile.Read(ref target);
        while (value > current)
        {
            var seen = Interlocked.CompareExchange(ref target, value, current);
            if (seen == current)
            {
                return;
            }

            current = seen;
        }
    }
}
