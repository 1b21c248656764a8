using System.Globalization;
using System.Text;
using System.Text.Json;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Scenarios.Broadcast;
using ChannelPool.Perf.Scenarios.Collaboration;
using ChannelPool.Perf.Servers;
using ChannelPool.PollingDuplex;
using ChannelPool.Testing.PollingDuplex;
using ChannelPool.Testing.Redis;
using Spectre.Console;
using StackExchange.Redis;

namespace ChannelPool.Perf.Scenarios.Redis;

/// <summary>
/// One node on each store, one after the other, for the same work: the broadcast search at P = 1 s and the
/// collaboration rows (the scenarios' own scripts, against the node's pub/sub endpoint); then the Redis commands one
/// publish and one delivery cost as a topic's subscribers grow. It starts its own redis-server, Redis Cluster and nodes.
/// </summary>
internal sealed class RedisRun(PerfContext context, RedisSettings settings)
{
    public async Task<RedisResults> RunAsync(CancellationToken cancellationToken)
    {
        context.ServesInProcess = true;
        await using var oneRedis = await RedisServerProcess.StartAsync();
        await using var redisCluster = settings.Stores.Contains(RedisStoreKind.RedisCluster) ? await RedisClusterProcess.StartAsync() : null;
        var stores = new List<RedisStoreResult>();
        foreach (var kind in settings.Stores)
        {
            var (name, configuration) = kind switch
            {
                RedisStoreKind.InMemory => ("in memory", null),
                RedisStoreKind.OneRedis => ("Redis, one server", oneRedis.Configuration),
                _ => ("Redis Cluster, 3 shards", redisCluster!.Configuration),
            };
            await using var node = await DuplexCluster.StartAsync(new DuplexClusterOptions { Redis = configuration });
            using var admin = configuration is null ? null : await ConnectionMultiplexer.ConnectAsync(configuration + ",allowAdmin=true");
            var transport = new RenamedTransport(new DuplexPubSubTransport(context.Http, node.PubSub, DuplexEncoding.Binary, PollingDuplexMode.MultipleMessagesPerPoll), name);
            var broadcast = await new BroadcastRun(context, settings.Broadcast, admin is null ? NoStats : t => RedisStatsAsync(admin, t)).RunAsync([transport], cancellationToken);
            var collaboration = await new CollaborationRun(context, settings.Collaboration).RunAsync([transport], cancellationToken);
            stores.Add(new RedisStoreResult(name, broadcast.Single(), collaboration));
            context.Console.MarkupLine($"[grey]{Markup.Escape(name)}: done[/]");
        }

        return new RedisResults(stores, await CountRedisCommandsAsync(oneRedis, cancellationToken));
    }

    private static Task<ServerStats> NoStats(CancellationToken cancellationToken) => Task.FromResult(ServerStats.Unknown);

    /// <summary>Redis's own processor time so far (user + system, every master): the broadcast's "server" CPU.</summary>
    private static async Task<ServerStats> RedisStatsAsync(ConnectionMultiplexer admin, CancellationToken cancellationToken)
    {
        var cpu = 0.0;
        foreach (var server in admin.GetServers().Where(s => !s.IsReplica))
        {
            cpu += (await RedisCpuAsync(server)).TotalSeconds;
        }

        return new ServerStats(true, cpu, -1, new Dictionary<string, long>());
    }

    /// <summary>Counts what Redis runs for publishes to N subscribers and for delivering them, on one server.</summary>
    private async Task<IReadOnlyList<RedisCommandCount>> CountRedisCommandsAsync(RedisServerProcess redis, CancellationToken cancellationToken)
    {
        const int Publishes = RedisSettings.PublishesPerCount;
        var counts = new List<RedisCommandCount>();
        // N subscribers open and subscribe before any polls: they stay pending that long, and none may be evicted.
        var most = settings.SubscriberCounts.Max();
        await using var node = await DuplexCluster.StartAsync(new DuplexClusterOptions
        {
            Redis = redis.Configuration,
            Configure = o =>
            {
                o.ServerPollTimeout = TimeSpan.FromSeconds(30);
                o.MaxPendingSessions = most + 2;
                o.FirstPollTimeout = TimeSpan.FromMinutes(10);
            },
        });
        using var admin = await ConnectionMultiplexer.ConnectAsync(redis.Configuration + ",allowAdmin=true");
        var server = admin.GetServer(admin.GetEndPoints()[0]);
        foreach (var n in settings.SubscriberCounts)
        {
            var topic = $"count-{n}";
            var subscribers = await context.Console.Status().StartAsync($"Redis commands: {n:N0} subscribers", async _ =>
            {
                var opened = new (string Id, string Token)[n];
                await Parallel.ForEachAsync(Enumerable.Range(0, n), new ParallelOptions { MaxDegreeOfParallelism = 32, CancellationToken = cancellationToken }, async (i, token) =>
                {
                    opened[i] = await OpenRawAsync(node.PubSub, token);
                    await SendRawAsync(node.PubSub, opened[i], $"{{\"seq\":1,\"data\":{{\"op\":\"subscribe\",\"topic\":\"{topic}\"}}}}\n", token);
                });
                return opened;
            });

            var publisher = await OpenRawAsync(node.PubSub, cancellationToken);
            var before = await SnapshotAsync(server);
            for (var i = 1; i <= Publishes; i++)
            {
                await SendRawAsync(node.PubSub, publisher, Publish(topic, i, i), cancellationToken);
            }

            var published = await SnapshotAsync(server);
            await Parallel.ForEachAsync(subscribers, new ParallelOptions { MaxDegreeOfParallelism = 32, CancellationToken = cancellationToken }, async (s, token) =>
                await PollRawAsync(node.PubSub, s, ack: 0, token));
            var taken = await SnapshotAsync(server);

            // Broadcast's shape: every subscriber holds a poll, and one publish wakes them all. Only while the clients
            // fit this process's sockets (a held poll is a connection at both ends).
            var held = (Trips: double.NaN, Commands: double.NaN, Cpu: double.NaN);
            var processCpu = double.NaN;
            if (n <= context.ClientCapacity)
            {
                var polls = subscribers.Select(s => PollRawAsync(node.PubSub, s, ack: Publishes, cancellationToken)).ToList();
                await Task.Delay(TimeSpan.FromMilliseconds(500 + (n / 10)), cancellationToken);
                var waiting = await SnapshotAsync(server);
                var cpu = ProcessCpu();
                await SendRawAsync(node.PubSub, publisher, Publish(topic, Publishes + 1, Publishes + 1), cancellationToken);
                await Task.WhenAll(polls);
                processCpu = (ProcessCpu() - cpu).TotalMicroseconds / n;
                held = (waiting, await SnapshotAsync(server)) is var (w, d) ? ((d.Trips - w.Trips) / (double)n, (d.Commands - w.Commands) / (double)n, (d.Cpu - w.Cpu).TotalMicroseconds / n) : held;
            }

            double frames = n * Publishes;
            counts.Add(new RedisCommandCount(
                n,
                (published.Trips - before.Trips) / (double)Publishes,
                (published.Commands - before.Commands) / (double)Publishes,
                (published.Cpu - before.Cpu).TotalMicroseconds / Publishes,
                (taken.Trips - published.Trips) / frames,
                (taken.Commands - published.Commands) / frames,
                (taken.Cpu - published.Cpu).TotalMicroseconds / frames,
                held.Trips,
                held.Commands,
                held.Cpu,
                processCpu));
            context.Console.MarkupLine($"  N = {n:N0}: {counts[^1].CommandsPerPublish:0} commands and {counts[^1].RoundTripsPerPublish:0.0} round trips per publish; a held poll's delivery: {held.Trips:0.00} round trips, {held.Cpu:0} µs Redis CPU, {processCpu:0} µs this process's CPU");
        }

        return counts;
    }

    private static TimeSpan ProcessCpu()
    {
        using var process = System.Diagnostics.Process.GetCurrentProcess();
        return process.TotalProcessorTime;
    }

    private static string Publish(string topic, long seq, int data) => $"{{\"seq\":{seq},\"data\":{{\"op\":\"publish\",\"topic\":\"{topic}\",\"data\":{data}}}}}\n";

    /// <summary>Redis's own processor time so far (user + system), from INFO cpu: what the server spent, whoever asked.</summary>
    private static async Task<TimeSpan> RedisCpuAsync(IServer server)
    {
        var cpu = (await server.InfoAsync("cpu")).SelectMany(g => g).ToDictionary(p => p.Key, p => p.Value);
        return TimeSpan.FromSeconds(double.Parse(cpu["used_cpu_user"], CultureInfo.InvariantCulture) + double.Parse(cpu["used_cpu_sys"], CultureInfo.InvariantCulture));
    }

    /// <summary>Scripts run (round trips), commands (inside scripts too) and processor time, so far.</summary>
    private static async Task<(long Trips, long Commands, TimeSpan Cpu)> SnapshotAsync(IServer server)
    {
        long trips = 0, commands = 0;
        foreach (var pair in (await server.InfoAsync("commandstats")).SelectMany(g => g))
        {
            // cmdstat_evalsha:calls=12,usec=...
            if (pair.Key is "cmdstat_info")
            {
                continue;
            }

            var calls = long.Parse(pair.Value.Split(',')[0].Split('=')[1], CultureInfo.InvariantCulture);
            commands += calls;
            trips += pair.Key is "cmdstat_evalsha" or "cmdstat_eval" ? calls : 0;
        }

        return (trips, commands, await RedisCpuAsync(server));
    }

    private async Task<(string Id, string Token)> OpenRawAsync(Uri endpoint, CancellationToken cancellationToken)
    {
        using var response = await context.Http.PostAsync(new Uri(endpoint + "/sessions"), new StringContent("{\"mode\":\"multiple\"}", Encoding.UTF8, "application/json"), cancellationToken);
        response.EnsureSuccessStatusCode();
        using var json = JsonDocument.Parse(await response.Content.ReadAsStringAsync(cancellationToken));
        return (json.RootElement.GetProperty("sessionId").GetString()!, json.RootElement.GetProperty("token").GetString()!);
    }

    private async Task SendRawAsync(Uri endpoint, (string Id, string Token) session, string ndjson, CancellationToken cancellationToken)
    {
        using var response = await RawAsync(HttpMethod.Post, new Uri($"{endpoint}/sessions/{session.Id}/messages"), session.Token, new StringContent(ndjson, Encoding.UTF8, "application/x-ndjson"), cancellationToken);
        response.EnsureSuccessStatusCode();
    }

    private async Task PollRawAsync(Uri endpoint, (string Id, string Token) session, long ack, CancellationToken cancellationToken)
    {
        using var response = await RawAsync(HttpMethod.Get, new Uri($"{endpoint}/sessions/{session.Id}/poll?ack={ack}"), session.Token, null, cancellationToken);
        response.EnsureSuccessStatusCode();
        await response.Content.ReadAsByteArrayAsync(cancellationToken);
    }

    private Task<HttpResponseMessage> RawAsync(HttpMethod method, Uri uri, string token, HttpContent? content, CancellationToken cancellationToken)
    {
        var request = new HttpRequestMessage(method, uri) { Content = content };
        request.Headers.Add(DuplexWire.SessionTokenHeader, token);
        return context.Http.SendAsync(request, cancellationToken);
    }
}
