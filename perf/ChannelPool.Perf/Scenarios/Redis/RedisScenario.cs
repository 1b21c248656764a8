using System.CommandLine;
using System.Globalization;
using System.Text;
using System.Text.Json;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Scenarios.Broadcast;
using ChannelPool.Perf.Scenarios.Collaboration;
using ChannelPool.Perf.Servers;
using ChannelPool.PollingDuplex;
using ChannelPool.Testing.PollingDuplex;
using ChannelPool.Testing.Redis;
using Spectre.Console;
using StackExchange.Redis;
using static ChannelPool.Perf.Reporting.ReportFormat;

namespace ChannelPool.Perf.Scenarios.Redis;

/// <summary>
/// The <c>redis</c> command: one node in memory, on one Redis and on a 3-shard Redis Cluster, each searched for its
/// broadcast capacity at P = 1 s and run through the original's collaboration rows; then the Redis commands one publish
/// and one delivery cost as a topic's subscribers grow from 10 to 10,000. Not in the suite: it needs redis-server, and
/// it starts its own nodes instead of the embedded servers.
/// </summary>
internal sealed class RedisScenario : PerfScenario<RedisSettings, RedisResults>
{
    public override string Name => "redis";

    public override string Description => "One node in memory, on one Redis and on a 3-shard Redis Cluster: broadcast capacity at P = 1 s, the original's collaboration rows, and Redis commands per publish and per delivery as N grows from 10 to 10,000. Needs /usr/bin/redis-server and redis-cli.";

    public override bool UsesEmbeddedServers => false;

    protected override RedisSettings Basis(bool quick)
    {
        var basis = new RedisSettings();
        return quick
            ? basis with
            {
                Broadcast = basis.Broadcast with { MaxClients = 40, StartClients = 20, Bursts = 2, ScoutBursts = 2, Resolution = 0.5 },
                Collaboration = basis.Collaboration with { Rows = [new CollaborationRow(4, 2, TimeSpan.FromSeconds(1))], Iterations = 2, DelayScale = 0.5 },
                SubscriberCounts = [1, 10],
            }
            : basis;
    }

    public override Task<RedisResults> RunAsync(PerfContext context, RedisSettings settings, CancellationToken cancellationToken) =>
        new RedisRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(RedisResults results, RedisSettings settings, PerfContext context)
    {
        var section = NewSection("Redis: one node in memory, on one Redis and on a Redis Cluster; Redis work per publish and per delivery", results);
        var memory = results.Stores.FirstOrDefault(s => s.Store == "in memory")?.Broadcast.LargestClients;
        section.Tables.Add(new ReportTable(
            "Broadcast capacity at P = 1 s, one node",
            ["Store", "Largest M", "Of in memory", "Limit", "p50 ms", "p99 ms", "Process CPU µs/delivery", "Redis CPU µs/delivery"],
            [.. results.Stores.Select(s => Confirmed(s) is var probe ? (IReadOnlyList<string>)[
                s.Store, Num(s.Broadcast.LargestClients), memory is > 0 ? Ratio((double)s.Broadcast.LargestClients / memory.Value) : "-", s.Broadcast.Limit ?? string.Empty,
                Num(probe?.Latency.P50Ms ?? double.NaN, "0.0"), Num(probe?.Latency.P99Ms ?? double.NaN, "0.0"),
                Num(probe?.ClientCpuMicrosPerDelivery ?? double.NaN, "0.0"), Num(probe?.ServerCpuMicrosPerDelivery ?? double.NaN, "0.0")] : [])]));
        var rows = results.Stores.Count > 0 ? results.Stores[0].Collaboration.Select(c => c.Row).ToList() : [];
        section.Tables.Add(new ReportTable(
            "Collaboration latency, mean / p99 ms",
            ["T×N, D", .. results.Stores.Select(s => s.Store), "Original mean"],
            [.. rows.Select((row, i) => (IReadOnlyList<string>)[
                row.Label,
                .. results.Stores.Select(s => s.Collaboration[i] is var c && c.Limit is null ? $"{Num(c.Latency.MeanMs, "0.0")} / {Num(c.Latency.P99Ms, "0.0")}{(c.Lost + c.Duplicates > 0 ? $" ({c.Lost} lost, {c.Duplicates} dup)" : string.Empty)}" : "skipped"),
                row.Original is { } original ? Num(original.MeanMs, "0") : string.Empty])]));
        section.Tables.Add(new ReportTable(
            "Redis work per publish and per delivery, one server",
            ["Subscribers N", "Round trips / publish", "Commands / publish", "Redis µs / publish", "Round trips / frame (20 per poll)", "Commands / frame", "Redis µs / frame", "Round trips / delivery (held polls)", "Commands / delivery", "Redis µs / delivery", "Process µs / delivery"],
            [.. results.Commands.Select(c => (IReadOnlyList<string>)[
                Num(c.Subscribers), Num(c.RoundTripsPerPublish, "0.0"), Num(c.CommandsPerPublish, "0.0"), Num(c.RedisCpuMicrosPerPublish, "0"),
                Num(c.RoundTripsPerFrame, "0.00"), Num(c.CommandsPerFrame, "0.0"), Num(c.RedisCpuMicrosPerFrame, "0.0"),
                Num(c.RoundTripsPerHeldDelivery, "0.00"), Num(c.CommandsPerHeldDelivery, "0.0"), Num(c.RedisCpuMicrosPerHeldDelivery, "0.0"), Num(c.ProcessCpuMicrosPerHeldDelivery, "0.0")])]));
        AddTargets(section, results);
        section.Notes.Add("Process CPU is this whole process's (clients and node share it) per delivered notification; Redis CPU is every master's, from INFO cpu, over the same probe.");
        section.Notes.Add("Round trips are the scripts the node ran (EVALSHA); commands include those the scripts ran. A held-poll row is left out where N polls would not fit this process's open files.");
        return section;
    }

    private static Broadcast.BroadcastProbe? Confirmed(RedisStoreResult store) =>
        store.Broadcast.Probes.LastOrDefault(p => p.Passed && p.Clients == store.Broadcast.LargestClients);

    private static void AddTargets(ReportSection section, RedisResults results)
    {
        if (results.Commands.Count >= 2)
        {
            var (first, last) = (results.Commands[0], results.Commands[^1]);
            var flat = Math.Abs(last.CommandsPerPublish - first.CommandsPerPublish) <= 1;
            section.Targets.Add(new TargetCheck(
                $"A publish's Redis commands do not grow with N ({first.Subscribers:N0} → {last.Subscribers:N0} subscribers)",
                $"{first.CommandsPerPublish:0.#} → {last.CommandsPerPublish:0.#} commands per publish",
                flat,
                flat ? null : $"{last.CommandsPerPublish - first.CommandsPerPublish:0.#} more at N = {last.Subscribers:N0}"));
        }

        if (results.Stores.FirstOrDefault(s => s.Store == "in memory") is { Broadcast.LargestClients: > 0 } memory)
        {
            foreach (var redis in results.Stores.Where(s => s != memory))
            {
                var ratio = (double)redis.Broadcast.LargestClients / memory.Broadcast.LargestClients;
                section.Targets.Add(new TargetCheck(
                    $"Broadcast at P = 1 s: one node on {redis.Store} carries ≥ ½ of what it carries in memory",
                    $"{Ratio(ratio)} ({redis.Broadcast.LargestClients:N0} vs {memory.Broadcast.LargestClients:N0})" + (memory.Broadcast.Limit is { } limit ? $"; in memory {limit}" : string.Empty),
                    ratio >= 0.5,
                    ratio >= 0.5 ? null : $"{Ratio(ratio / 0.5)} of the ½ asked"));
            }
        }
    }
}

/// <summary>Where the redis command's one node keeps its sessions.</summary>
internal enum RedisStoreKind
{
    /// <summary>In the node's memory: the floor the others are measured against.</summary>
    InMemory,

    /// <summary>In one redis-server.</summary>
    OneRedis,

    /// <summary>In a Redis Cluster of three masters.</summary>
    RedisCluster,
}

/// <summary>The redis scenario's settings.</summary>
internal sealed record RedisSettings
{
    /// <summary>How many publishes each command count sends, one at a time, before the subscribers' polls take them all.</summary>
    public const int PublishesPerCount = 20;

    /// <summary>Gets the stores the node runs on, one after the other.</summary>
    public IReadOnlyList<RedisStoreKind> Stores { get; init; } = [RedisStoreKind.InMemory, RedisStoreKind.OneRedis, RedisStoreKind.RedisCluster];

    /// <summary>Gets the broadcast search at P = 1 s, run on every store.</summary>
    public BroadcastSettings Broadcast { get; init; } = new() { Periods = [TimeSpan.FromSeconds(1)], Bursts = 10, ScoutBursts = 3, MaxClients = 20_000 };

    /// <summary>Gets the collaboration rows (the original's seven, out of step, every D at a tenth), run on every store.</summary>
    public CollaborationSettings Collaboration { get; init; } = new() { Rows = CollaborationRow.Original7, Iterations = 3, DelayScale = 0.1 };

    /// <summary>Gets the subscriber counts N the Redis commands are counted at.</summary>
    public IReadOnlyList<int> SubscriberCounts { get; init; } = [10, 100, 1000, 10_000];
}

/// <summary>One store: its broadcast capacity and its collaboration rows.</summary>
/// <param name="Store">The store's name in the report.</param>
/// <param name="Broadcast">The broadcast search.</param>
/// <param name="Collaboration">One result per collaboration row.</param>
internal sealed record RedisStoreResult(string Store, BroadcastResult Broadcast, IReadOnlyList<CollaborationResult> Collaboration);

/// <summary>
/// What Redis ran, on one server, as a topic's subscribers N grow: per publish (none polling), per frame when each
/// subscriber's one poll takes all of them, and per delivery when every subscriber holds a poll and one publish wakes
/// them all (broadcast's shape). Round trips are the scripts the node ran; commands include those inside scripts.
/// </summary>
internal sealed record RedisCommandCount(
    int Subscribers,
    double RoundTripsPerPublish,
    double CommandsPerPublish,
    double RedisCpuMicrosPerPublish,
    double RoundTripsPerFrame,
    double CommandsPerFrame,
    double RedisCpuMicrosPerFrame,
    double RoundTripsPerHeldDelivery,
    double CommandsPerHeldDelivery,
    double RedisCpuMicrosPerHeldDelivery,
    double ProcessCpuMicrosPerHeldDelivery);

/// <summary>The redis scenario's results.</summary>
/// <param name="Stores">One per store.</param>
/// <param name="Commands">One per subscriber count.</param>
internal sealed record RedisResults(IReadOnlyList<RedisStoreResult> Stores, IReadOnlyList<RedisCommandCount> Commands);

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
                var cpu = Environment.CpuUsage.TotalTime;
                await SendRawAsync(node.PubSub, publisher, Publish(topic, Publishes + 1, Publishes + 1), cancellationToken);
                await Task.WhenAll(polls);
                processCpu = (Environment.CpuUsage.TotalTime - cpu).TotalMicroseconds / n;
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
