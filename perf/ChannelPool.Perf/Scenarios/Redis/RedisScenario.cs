using System.CommandLine;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Scenarios.Collaboration;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Redis;

/// <summary>
/// The <c>redis</c> command: one node in memory, on one Redis and on a 3-shard Redis Cluster, each searched for its
/// broadcast capacity at P = 1 s and run through the original's collaboration rows; then the Redis commands one publish
/// and one delivery cost as a topic's subscribers grow from 10 to 10,000. Not in the suite: it needs redis-server, and
/// it starts its own nodes instead of the embedded servers.
/// </summary>
internal sealed class RedisScenario : PerfScenario<RedisSettings, RedisResults>
{
    private readonly Option<int> _maxClients = PositiveInt("--max-clients", "The largest broadcast M tried (the open-file limit may cap it lower).", 20_000);
    private readonly Option<int> _bursts = PositiveInt("--bursts", "K: consecutive broadcast bursts, one a second, that must each arrive before the next.", 10, max: 1000);
    private readonly Option<int> _iterations = PositiveInt("--iterations", "Collaboration iterations per row.", 3, max: 1000);
    private readonly Option<double> _delayScale = PositiveDouble("--delay-scale", "A factor on every collaboration D.", 0.1);
    private readonly Option<int[]> _subscribers = new("--subscribers") { Description = "The subscriber counts N the Redis commands are counted at. Default: 10 100 1000 10000.", DefaultValueFactory = _ => [10, 100, 1000, 10_000], AllowMultipleArgumentsPerToken = true };
    private readonly Option<int[]> _rows = new("--rows") { Description = "Which of the original's seven collaboration rows to run, by number (1-7); none with 0. Default: all.", DefaultValueFactory = _ => [1, 2, 3, 4, 5, 6, 7], AllowMultipleArgumentsPerToken = true };
    private readonly Option<string[]> _stores = new("--stores") { Description = "The stores the node runs on: memory, redis, cluster. Default: all three.", DefaultValueFactory = _ => ["memory", "redis", "cluster"], AllowMultipleArgumentsPerToken = true };

    /// <summary>Initializes a new instance of the <see cref="RedisScenario"/> class.</summary>
    public RedisScenario()
    {
        _subscribers.Validators.Add(r =>
        {
            foreach (var n in r.GetValueOrDefault<int[]>() ?? [])
            {
                if (n < 1 || n > 100_000)
                {
                    r.AddError($"--subscribers must be from 1 to 100000; got {n}.");
                }
            }
        });
        _stores.AcceptOnlyFromAmong("memory", "redis", "cluster");
        _rows.Validators.Add(r =>
        {
            foreach (var row in r.GetValueOrDefault<int[]>() ?? [])
            {
                if (row is < 0 or > 7)
                {
                    r.AddError($"--rows are the original's rows 1 to 7, or 0 for none; got {row}.");
                }
            }
        });
    }

    public override string Name => "redis";

    public override string Description => "One node in memory, on one Redis and on a 3-shard Redis Cluster: broadcast capacity at P = 1 s, the original's collaboration rows, and Redis commands per publish and per delivery as N grows from 10 to 10,000. Needs /usr/bin/redis-server and redis-cli.";

    public override bool UsesEmbeddedServers => false;

    public override void AddOptions(Command command)
    {
        command.Add(_maxClients);
        command.Add(_bursts);
        command.Add(_iterations);
        command.Add(_delayScale);
        command.Add(_subscribers);
        command.Add(_rows);
        command.Add(_stores);
    }

    public override RedisSettings ReadSettings(ParseResult parse, bool quick)
    {
        var basis = new RedisSettings();
        var stores = parse.GetValue(_stores)!.Distinct().Select(s => s switch
        {
            "memory" => RedisStoreKind.InMemory,
            "redis" => RedisStoreKind.OneRedis,
            _ => RedisStoreKind.RedisCluster,
        }).ToList();
        return basis with
        {
            Stores = stores,
            Broadcast = basis.Broadcast with
            {
                MaxClients = Pick(parse, _maxClients, quick, 40),
                StartClients = quick ? 20 : basis.Broadcast.StartClients,
                Bursts = Pick(parse, _bursts, quick, 2),
                ScoutBursts = quick ? 2 : basis.Broadcast.ScoutBursts,
                Resolution = quick ? 0.5 : basis.Broadcast.Resolution,
            },
            Collaboration = basis.Collaboration with
            {
                Rows = quick && !IsExplicit(parse, _rows)
                    ? [new CollaborationRow(4, 2, TimeSpan.FromSeconds(1))]
                    : [.. parse.GetValue(_rows)!.Where(r => r > 0).Distinct().Order().Select(r => CollaborationRow.Original7[r - 1])],
                Iterations = Pick(parse, _iterations, quick, 2),
                DelayScale = Pick(parse, _delayScale, quick, 0.5),
            },
            SubscriberCounts = IsExplicit(parse, _subscribers) || !quick ? parse.GetValue(_subscribers)! : [1, 10],
        };
    }

    public override Task<RedisResults> RunAsync(PerfContext context, RedisSettings settings, CancellationToken cancellationToken) =>
        new RedisRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(RedisResults results, RedisSettings settings, PerfContext context)
    {
        var section = NewSection(
            "Redis: one node in memory, on one Redis and on a Redis Cluster; Redis work per publish and per delivery",
            "One node on Kestrel in this process, its pub/sub endpoint on each store in turn: in memory, on one redis-server, and on a Redis Cluster of three masters (redis-cli --cluster create), all on 127.0.0.1 without persistence. " +
            $"Broadcast: the largest M clients on one topic for which each of K = {settings.Broadcast.Bursts} bursts, one a second, reaches every client within the second (the broadcast command's search, binary, multiple mode). " +
            $"Collaboration: the original's seven rows, topics out of step, {settings.Collaboration.Iterations} iterations, every D × {settings.Collaboration.DelayScale:0.##}. " +
            $"Then, on one redis-server, {RedisSettings.PublishesPerCount} publishes to N subscribers with no poll outstanding; one poll per subscriber taking all of them; and one publish to N held polls; counted with INFO commandstats and INFO cpu.",
            results);
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
