using System.CommandLine;
using ChannelPool.Perf.Reporting;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Redis;

/// <summary>
/// The <c>redis</c> command: the Redis store against the in-memory store, and 1 node against 3 behind a round-robin
/// balancer, for broadcast and collaboration; and the Redis commands per publish and per delivery. Not in the suite:
/// it needs redis-server, and it starts its own nodes instead of the embedded servers.
/// </summary>
internal sealed class RedisScenario : PerfScenario<RedisSettings, RedisResults>
{
    private readonly Option<int> _clients = PositiveInt("--clients", "Broadcast subscribers M.", 1000, max: 20_000);
    private readonly Option<int> _bursts = PositiveInt("--bursts", "Broadcast bursts K, one a second.", 10, max: 1000);
    private readonly Option<int> _rooms = PositiveInt("--rooms", "Collaboration topics T (the original's first row: 100).", 100, max: 10_000);
    private readonly Option<int> _members = PositiveInt("--members", "Collaboration clients per topic N, at least 2 (the original's first row: 5).", 5, max: 100);
    private readonly Option<int> _rounds = PositiveInt("--rounds", "Collaboration rounds, D = 1 s apart; in each, one member of every topic publishes, in turn.", 10, max: 1000);

    /// <summary>Initializes a new instance of the <see cref="RedisScenario"/> class.</summary>
    public RedisScenario() => _members.Validators.Add(r =>
    {
        if (r.GetValueOrDefault<int>() == 1)
        {
            r.AddError("--members must be at least 2: one publishes, the others receive; got 1.");
        }
    });

    public override string Name => "redis";

    public override string Description => "The Redis store against the in-memory store, and 1 node against 3 behind a round-robin balancer: broadcast at P = 1 s, collaboration latency, Redis commands per publish and per delivery. Needs /usr/bin/redis-server.";

    public override bool UsesEmbeddedServers => false;

    public override void AddOptions(Command command)
    {
        command.Add(_clients);
        command.Add(_bursts);
        command.Add(_rooms);
        command.Add(_members);
        command.Add(_rounds);
    }

    public override RedisSettings ReadSettings(ParseResult parse, bool quick) => new()
    {
        Clients = Pick(parse, _clients, quick, 20),
        Bursts = Pick(parse, _bursts, quick, 2),
        Rooms = Pick(parse, _rooms, quick, 4),
        Members = Pick(parse, _members, quick, 2),
        Rounds = Pick(parse, _rounds, quick, 2),
        SubscriberCounts = quick ? [1, 10] : new RedisSettings().SubscriberCounts,
    };

    public override Task<RedisResults> RunAsync(PerfContext context, RedisSettings settings, CancellationToken cancellationToken) =>
        new RedisRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(RedisResults results, RedisSettings settings, PerfContext context)
    {
        var section = NewSection(
            "Redis: the store's cost, 1 node against 3, and Redis work per publish and per delivery",
            $"The pub/sub service three ways, one after the other, in this process: in memory on one node, on Redis on one node, and on Redis on 3 nodes behind YARP (round-robin, no affinity), against a redis-server on 127.0.0.1 without persistence. " +
            $"Broadcast: M = {settings.Clients:N0} clients on one topic, a burst every second, {settings.Bursts} bursts (on time: every client had it within 1 s). " +
            $"Collaboration: {settings.Rooms} topics × {settings.Members} clients, {settings.Rounds} rounds 1 s apart, one member of each topic publishing per round, publish to receipt. " +
            $"Then, on one node on Redis, {RedisSettings.PublishesPerCount} publishes to N subscribers, each sent alone, and one poll per subscriber (multiple mode) taking all {RedisSettings.PublishesPerCount} frames, counted with INFO commandstats and INFO cpu.",
            results);
        section.Tables.Add(new ReportTable(
            "Store and nodes",
            ["Store and nodes", "Broadcast M", "Bursts on time", "Worst burst ms", "Delivery p50 ms", "Delivery p99 ms", "Collab mean ms", "Collab p99 ms", "Process CPU µs/delivery"],
            [.. results.Stores.Select(s => (IReadOnlyList<string>)[
                s.Store, Num(s.Clients), $"{s.BurstsOnTime}/{s.Bursts}", NumOrMissed(s.WorstBurstMs, "0.0"), Num(s.Delivery.P50Ms, "0.0"), Num(s.Delivery.P99Ms, "0.0"),
                Num(s.Collaboration.MeanMs, "0.0"), Num(s.Collaboration.P99Ms, "0.0"), Num(s.ProcessCpuMicrosPerDelivery, "0.0")])]));
        section.Tables.Add(new ReportTable(
            "Redis work per publish and per delivered frame",
            ["Subscribers N", "Round trips per publish", "Commands per publish", "Commands per publish per subscriber", "Redis CPU µs per publish", "Round trips per delivered frame", "Commands per delivered frame", "Redis CPU µs per delivered frame"],
            [.. results.Commands.Select(c => (IReadOnlyList<string>)[
                Num(c.Subscribers), Num(c.RoundTripsPerPublish, "0.0"), Num(c.CommandsPerPublish, "0"), Num(c.CommandsPerPublishPerSubscriber, "0.0"), Num(c.RedisCpuMicrosPerPublish, "0"),
                Num(c.RoundTripsPerFrame, "0.00"), Num(c.CommandsPerFrame, "0.0"), Num(c.RedisCpuMicrosPerFrame, "0.0")])]));
        section.Notes.Add("Process CPU is this whole process's (clients, nodes and balancer share it) during the broadcast, per delivered notification; Redis runs in its own process.");
        section.Notes.Add($"{RedisSettings.PublishesPerCount} publishes per row, each sent alone; then each subscriber's one poll (multiple mode) takes all {RedisSettings.PublishesPerCount} frames. Commands include those run inside the scripts (INFO commandstats).");
        return section;
    }
}
