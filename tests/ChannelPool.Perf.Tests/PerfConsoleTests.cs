using System.CommandLine;
using System.Text.Json;
using ChannelPool.Perf.Cli;
using ChannelPool.Perf.Peers;
using ChannelPool.Perf.Servers;

namespace ChannelPool.Perf.Tests;

/// <summary>
/// The perf console, run as a newcomer runs it but shrunk with --quick, so it cannot rot: as the peers console builds it,
/// which has every command of the main one and the peers besides.
/// </summary>
public class PerfConsoleTests
{
    private string _output = null!;

    [SetUp]
    public void CreateOutputFolder() => _output = Directory.CreateTempSubdirectory("channelpool-perf-").FullName;

    [TearDown]
    public void RemoveOutputFolder() => Directory.Delete(_output, recursive: true);

    [Test]
    public async Task QuickSuite_RunsEveryScenarioAgainstItsServers_AndWritesTheReport()
    {
        var (exit, console) = await RunAsync("--quick", "--output", _output);

        Assert.That(exit, Is.EqualTo(0), console);
        var run = Directory.GetDirectories(_output).Single();
        var markdown = await File.ReadAllTextAsync(Path.Combine(run, "report.md"));
        Assert.That(markdown, Does.Contain("## Proxies").And.Contain("## Headroom").And.Contain("## Poll modes").And.Contain("## Floor").And.Contain("## Broadcast").And.Contain("## Collaboration"));

        using var json = JsonDocument.Parse(await File.ReadAllBytesAsync(Path.Combine(run, "results.json")));
        var sections = json.RootElement.GetProperty("sections").EnumerateArray().ToDictionary(s => s.GetProperty("id").GetString()!, s => s.GetProperty("results"));
        Assert.That(sections.Keys, Is.EquivalentTo(new[] { "proxies", "headroom", "poll-modes", "floor", "broadcast", "collaboration", "balancing" }));

        // Balancing: four ways of reaching three instances, each measured on real calls, and a rolling restart that
        // ended evenly spread.
        var balancing = sections["balancing"];
        var cells = balancing.GetProperty("cells").EnumerateArray().ToList();
        Assert.That(cells.Select(c => c.GetProperty("kind").GetString()), Has.Exactly(4).Items);
        Assert.That(cells.Select(c => c.GetProperty("calls").GetInt64()), Has.All.GreaterThan(0));
        Assert.That(balancing.GetProperty("restart").GetProperty("secondsToEvenSpread").GetDouble(), Is.GreaterThan(0));

        // The figures come from real WCF calls: a per-call proxy pays a TLS handshake per call on every binding (a new
        // ClientBase builds a new factory, and with it a new connection); a warm net.tcp reuse pool pays none.
        var proxies = sections["proxies"].EnumerateArray().ToList();
        Assert.That(proxies, Has.Count.EqualTo(88), "seven kinds on four bindings at concurrency 1 and 8, four more under the other service setting on the two with sessions, and the service-time pass (four kinds, both settings) at 8 on those two");
        static string Text(JsonElement cell, string property) => cell.GetProperty(property).GetString()!;
        static double ServiceTime(JsonElement cell) => cell.GetProperty("serviceTimeMs").GetDouble();

        // The bindings with sessions ran against both service settings; a session that carries one call (per-call,
        // single-use) ran under the first only; the bindings without sessions ran once.
        var single = proxies.Where(c => Text(c, "service") == "one at a time (Single)" && ServiceTime(c) == 0).ToList();
        Assert.That(single.Select(c => Text(c, "binding")).Distinct(), Is.EquivalentTo(new[] { "WSHttp SecureConversation", "net.tcp TLS" }));
        Assert.That(single.Select(c => Text(c, "kind")).Distinct(), Is.EquivalentTo(new[] { "pooled reuse", "pooled reuse, exclusive", "pooled reuse, shared", "singleton" }));
        Assert.That(proxies.Where(c => Text(c, "binding") is "BasicHttps" or "WSHttp UserName").Select(c => Text(c, "service")), Is.All.EqualTo("no session"));
        var withServiceTime = proxies.Where(c => ServiceTime(c) > 0).ToList();
        Assert.That(withServiceTime, Has.Count.EqualTo(16));
        Assert.That(withServiceTime.Select(c => ServiceTime(c)), Is.All.EqualTo(2));
        Assert.That(withServiceTime.Select(c => c.GetProperty("concurrency").GetInt32()), Is.All.EqualTo(8));

        // Quick figures judge no target on the console, and output that is not a terminal carries no escape codes.
        Assert.That(console, Does.Contain("not judged (quick)").And.Not.Contain("missed ").And.Not.Contain("\u001b["));
        foreach (var cell in proxies)
        {
            Assert.That(cell.GetProperty("callsPerSecond").GetDouble(), Is.GreaterThan(0));
            Assert.That(cell.GetProperty("latency").GetProperty("count").GetInt32(), Is.EqualTo(40));
            Assert.That(cell.GetProperty("duringCalls").GetProperty("calls").GetInt64(), Is.EqualTo(40), "the server saw every call");
        }

        static long Handshakes(JsonElement cell, string when) => cell.GetProperty(when).GetProperty("tlsHandshakes").GetInt64();
        var perCall = proxies.Where(c => c.GetProperty("kind").GetString() == "per-call").ToList();
        Assert.That(perCall.Select(c => Handshakes(c, "duringCalls")), Is.All.GreaterThanOrEqualTo(40));
        // On the original's scenario the pool's channels negotiated their security contexts in warm-up, not on the calls'
        // path. Deadlines are spread over the lifetime (one every 1.8 s at PoolSize 50 and 90 s), so a replacement may
        // open in the background while a cell's calls run: at most a couple, against one a call per-call.
        var firstPass = proxies.Where(c => Text(c, "service") is "concurrent (Multiple)" or "no session" && ServiceTime(c) == 0).ToList();
        var secureConversationReuse = firstPass.Where(c => c.GetProperty("kind").GetString() == "pooled reuse" && c.GetProperty("binding").GetString() == "WSHttp SecureConversation").ToList();
        Assert.That(secureConversationReuse, Has.Count.EqualTo(2));
        Assert.That(secureConversationReuse.Select(c => c.GetProperty("warmUp").GetProperty("negotiations").GetInt64()), Is.All.GreaterThan(0));
        Assert.That(secureConversationReuse.Select(c => c.GetProperty("duringCalls").GetProperty("negotiations").GetInt64()), Is.All.LessThanOrEqualTo(2));
        var netTcpReuse = proxies.Where(c => c.GetProperty("kind").GetString() is "pooled reuse" or "pooled reuse, exclusive" or "pooled reuse, shared" && c.GetProperty("binding").GetString()!.StartsWith("net.tcp", StringComparison.Ordinal)).ToList();
        Assert.That(netTcpReuse, Has.Count.EqualTo(18), "three kinds: two settings at 1 and 8, and the service-time pass at 8");
        Assert.That(netTcpReuse.Select(c => Handshakes(c, "duringCalls")), Is.All.LessThanOrEqualTo(2), "background replacements only, not a handshake a call");
        Assert.That(netTcpReuse.Select(c => Handshakes(c, "warmUp")), Is.All.GreaterThan(0), "the pool's warm-up paid the handshakes");

        var pollModes = sections["poll-modes"].EnumerateArray().ToList();
        Assert.That(pollModes, Has.Count.EqualTo(6));
        Assert.That(pollModes.Select(c => c.GetProperty("messages").GetInt64()), Is.All.GreaterThan(0));

        // The floor measured every way of delivering against the bare endpoint, server and client CPU alike, and each of
        // our deliveries took one answered poll.
        var floor = sections["floor"].EnumerateArray().ToList();
        Assert.That(floor.Select(c => $"{c.GetProperty("name").GetString()}, {c.GetProperty("protocol").GetString()}, {c.GetProperty("messagesPerDelivery").GetInt32()}"), Is.EquivalentTo(new[]
        {
            "floor, HTTP/1.1, 1", "floor, HTTP/2, 1", "ours, single, HTTP/1.1, 1", "ours, multiple, HTTP/1.1, 1", "ours, multiple, HTTP/2, 1", "SignalR long polling, HTTP/1.1, 1",
            "floor, HTTP/1.1, 2", "ours, multiple, HTTP/1.1, 2",
        }));
        Assert.That(floor.Select(c => c.GetProperty("serverMicrosPerMessage").GetDouble()), Is.All.GreaterThan(0));
        Assert.That(floor.Select(c => c.GetProperty("clientMicrosPerMessage").GetDouble()), Is.All.GreaterThan(0));
        Assert.That(floor.Where(c => c.GetProperty("name").GetString() == "floor").Select(c => c.GetProperty("serverRatio").GetDouble()), Is.All.EqualTo(1));
        // No delivery took extra polls. Fewer responses than deliveries means a response carried more than one delivery,
        // which a quick run on a loaded machine does not rule out (0.67 once, at a load average of 30).
        Assert.That(floor.Where(c => c.GetProperty("name").GetString()!.StartsWith("ours", StringComparison.Ordinal)).Select(c => c.GetProperty("responsesPerDelivery").GetDouble()), Is.All.InRange(0.01, 1.5), console);

        // Broadcast and collaboration ran on all three transports, and every message of a passing probe arrived. The
        // broadcast ran ours and long polling on HTTP/2 (h2c, on a listener that speaks nothing else) and HTTP/1.1 both.
        var broadcast = sections["broadcast"].EnumerateArray().ToList();
        Assert.That(broadcast.Select(b => $"{b.GetProperty("transport").GetString()}, {b.GetProperty("protocol").GetString()}"), Is.EquivalentTo(new[]
        {
            "polling-duplex (multiple, binary, HTTP/2), HTTP/2", "polling-duplex (multiple, binary), HTTP/1.1",
            "signalr-longpolling (HTTP/2), HTTP/2", "signalr-longpolling, HTTP/1.1", "signalr-websockets, HTTP/1.1",
        }));
        Assert.That(broadcast.Select(b => b.GetProperty("largestClients").GetInt32()), Is.All.GreaterThan(0), console);
        var collaboration = sections["collaboration"].EnumerateArray().ToList();
        Assert.That(collaboration, Has.Count.EqualTo(6), "two rows × three transports");
        foreach (var row in collaboration)
        {
            Assert.That(row.GetProperty("lost").GetInt64(), Is.Zero, console);
            Assert.That(row.GetProperty("duplicates").GetInt64(), Is.Zero, console);
            Assert.That(row.GetProperty("latency").GetProperty("count").GetInt64(), Is.EqualTo(row.GetProperty("expected").GetInt64()));
        }
    }

    [Test]
    public async Task Headroom_Quick_RunsBothPools_AndTheAdaptiveTargetComesDownAtTheLowStep()
    {
        var (exit, console) = await RunAsync("headroom", "--quick", "--binding", "nettcp", "--output", _output);

        Assert.That(exit, Is.EqualTo(0), console);
        var run = Directory.GetDirectories(_output).Single();
        using var json = JsonDocument.Parse(await File.ReadAllBytesAsync(Path.Combine(run, "results.json")));
        var results = json.RootElement.GetProperty("sections").EnumerateArray().Single().GetProperty("results").EnumerateArray().ToList();
        Assert.That(results.Select(r => r.GetProperty("pool").GetString()), Is.EqualTo(new[] { "fixed 50", "adaptive" }));

        // The ramp 1, 2, 4, 8 (the quick peak), the low step in two parts, and the jump; every step made calls.
        static JsonElement Phase(JsonElement result, string name) =>
            result.GetProperty("phases").EnumerateArray().Single(p => p.GetProperty("name").GetString() == name);
        foreach (var result in results)
        {
            var phases = result.GetProperty("phases").EnumerateArray().ToList();
            Assert.That(phases.Select(p => p.GetProperty("callers").GetInt32()), Is.EqualTo(new[] { 1, 2, 4, 8, 1, 1, 8 }));
            Assert.That(phases.Select(p => p.GetProperty("calls").GetInt64()), Is.All.GreaterThan(0), console);
        }

        // The fixed pool's target is its PoolSize throughout; the adaptive one's follows the quiet low step down.
        Assert.That(Phase(results[0], "low step, quiet").GetProperty("meanTarget").GetDouble(), Is.EqualTo(50));
        Assert.That(Phase(results[1], "low step, quiet").GetProperty("meanTarget").GetDouble(), Is.LessThan(25), console);
        var markdown = await File.ReadAllTextAsync(Path.Combine(run, "report.md"));
        Assert.That(markdown, Does.Contain("## Headroom"));
    }

    [Test]
    public async Task Broadcast_SearchThatFailsItsFirstM_DescendsUntilAnMHolds_OrSaysNoneDidDownToOneClient()
    {
        // A 1 ms period: a burst to 20 clients cannot finish in time, so the first M fails.
        var (exit, console) = await RunAsync("broadcast", "--quick", "--transport", "polling-duplex", "--periods", "0.001", "--output", _output);

        Assert.That(exit, Is.EqualTo(0), console);
        using var json = JsonDocument.Parse(await File.ReadAllBytesAsync(Path.Combine(Directory.GetDirectories(_output).Single(), "results.json")));
        var result = json.RootElement.GetProperty("sections").EnumerateArray().Single().GetProperty("results").EnumerateArray().First();
        var probes = result.GetProperty("probes").EnumerateArray().ToList();
        Assert.That(probes[0].GetProperty("passed").GetBoolean(), Is.False, console);
        if (result.GetProperty("largestClients").GetInt32() is var largest and > 0)
        {
            Assert.That(probes.Last().GetProperty("passed").GetBoolean(), Is.True, "the search stopped at the M that held");
            Assert.That(probes.Last().GetProperty("clients").GetInt32(), Is.EqualTo(largest));
        }
        else
        {
            Assert.That(probes.Min(p => p.GetProperty("clients").GetInt32()), Is.EqualTo(1), "it went down to one client");
            Assert.That(result.GetProperty("limit").GetString(), Is.EqualTo("no M held all 2 bursts on time, down to 1 client(s)"));
        }
    }

    [Test]
    public async Task Broadcast_SideBySide_RunsEveryTransportAtOneM_InAlternatingRounds_BesideTheFloor()
    {
        var (exit, console) = await RunAsync("broadcast", "--quick", "--side-by-side", "20", "--rounds", "2", "--transport", "floor", "polling-duplex", "--http", "2", "--output", _output);

        Assert.That(exit, Is.EqualTo(0), console);
        var run = Directory.GetDirectories(_output).Single();
        using var json = JsonDocument.Parse(await File.ReadAllBytesAsync(Path.Combine(run, "results.json")));
        var results = json.RootElement.GetProperty("sections").EnumerateArray().Single().GetProperty("results").EnumerateArray().ToList();
        Assert.That(results.Select(r => r.GetProperty("transport").GetString()), Is.EqualTo(new[] { "floor (HTTP/2)", "polling-duplex (multiple, binary, HTTP/2)" }));
        foreach (var result in results)
        {
            // No search: only the kept rounds, each at the one M, each with both processes' CPU and allocation measured.
            Assert.That(result.GetProperty("probes").GetArrayLength(), Is.Zero);
            var rounds = result.GetProperty("alternating").EnumerateArray().ToList();
            Assert.That(rounds.Select(p => p.GetProperty("clients").GetInt32()), Is.EqualTo(new[] { 20, 20 }));
            Assert.That(rounds.Select(p => p.GetProperty("clientBytesPerDelivery").GetDouble()), Is.All.GreaterThan(0), console);
            Assert.That(rounds.Select(p => p.GetProperty("serverCpuMicrosPerDelivery").GetDouble()), Is.All.GreaterThan(0), console);
        }

        var markdown = await File.ReadAllTextAsync(Path.Combine(run, "report.md"));
        Assert.That(markdown, Does.Contain("CPU and allocation per delivery, side by side").And.Contain("| floor (HTTP/2) | HTTP/2 | 0.5 | 20 |"));
    }

    [Test]
    public async Task Broadcast_BoundsCompare_RunsTheUnboundedTwinBesidePubSub_InAlternatingRounds_AndJudgesTheCost()
    {
        var (exit, console) = await RunAsync("broadcast", "--quick", "--bounds", "compare", "--side-by-side", "20", "--rounds", "2", "--transport", "polling-duplex", "--http", "2", "--output", _output);

        Assert.That(exit, Is.EqualTo(0), console);
        var run = Directory.GetDirectories(_output).Single();
        using var json = JsonDocument.Parse(await File.ReadAllBytesAsync(Path.Combine(run, "results.json")));
        var results = json.RootElement.GetProperty("sections").EnumerateArray().Single().GetProperty("results").EnumerateArray().ToList();
        Assert.That(
            results.Select(r => r.GetProperty("transport").GetString()),
            Is.EqualTo(new[] { "polling-duplex (multiple, binary, HTTP/2)", "polling-duplex (multiple, binary, HTTP/2, unbounded)" }));
        Assert.That(results.Select(r => r.GetProperty("alternating").GetArrayLength()), Is.All.EqualTo(2));
        var markdown = await File.ReadAllTextAsync(Path.Combine(run, "report.md"));
        Assert.That(markdown, Does.Contain("the per-user and per-session bounds cost ≤ 2% of the capacity (server CPU per delivery, alternating rounds at M = 20)"));
    }

    [Test]
    public async Task TheUnboundedTwin_TellsItsClientsNoSendLimit_WhilePubSubKeepsTheDefault()
    {
        await using var server = await PerfServer.StartAsync(new PerfServerSettings { Wcf = false }, PerfPeers.None, CancellationToken.None);
        using var http = new HttpClient();

        async Task<int> MaxMessagesPerSendAsync(string path)
        {
            using var response = await http.PostAsync(new Uri(server.Endpoints.Http, path + "/sessions"), new StringContent("{\"mode\":\"multiple\"}", System.Text.Encoding.UTF8, "application/json"));
            Assert.That((int)response.StatusCode, Is.EqualTo(201), await response.Content.ReadAsStringAsync());
            using var open = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
            return open.RootElement.GetProperty("maxMessagesPerSend").GetInt32();
        }

        Assert.That(await MaxMessagesPerSendAsync("pubsub"), Is.EqualTo(new ChannelPool.PollingDuplex.PollingDuplexOptions().MaxMessagesPerSend));
        Assert.That(await MaxMessagesPerSendAsync("pubsub-unbounded"), Is.EqualTo(int.MaxValue));
    }

    [Test]
    public async Task Original_PutsOurTimesBesideThe2007Figures()
    {
        var (exit, console) = await RunAsync("original", "--quick", "--binding", "nettcp", "--output", _output);

        Assert.That(exit, Is.EqualTo(0), console);
        var run = Directory.GetDirectories(_output).Single();
        var markdown = await File.ReadAllTextAsync(Path.Combine(run, "report.md"));
        Assert.That(markdown, Does.Contain("| 2007 pool, wsHttpBinding (the original's figures) | 6:31 | 4:48 | 1:05 |").And.Contain("| net.tcp TLS | "));
        Assert.That(markdown, Does.Contain("- Command: `ChannelPool.Perf original --quick --binding nettcp`"), "the command as typed, without where the report went");

        // The original is a scenario of its own: its section, and the folder --publish would write, carry its name.
        using var json = JsonDocument.Parse(await File.ReadAllBytesAsync(Path.Combine(run, "results.json")));
        var section = json.RootElement.GetProperty("sections").EnumerateArray().Single();
        Assert.That(section.GetProperty("id").GetString(), Is.EqualTo("original"));
        Assert.That(section.GetProperty("results").EnumerateArray().Select(c => c.GetProperty("kind").GetString()), Is.EqualTo(new[] { "per-call", "pooled single-use", "singleton" }));
    }

    [Test]
    public async Task Redis_Quick_ComparesTheStores_AndCountsRedisWorkPerPublish()
    {
        if (!File.Exists("/usr/bin/redis-server"))
        {
            Assert.Ignore("redis-server is not installed (apt-get install redis-server; .ci/run installs it).");
        }

        var (exit, console) = await RunAsync("redis", "--quick", "--output", _output);

        Assert.That(exit, Is.EqualTo(0), console);
        var run = Directory.GetDirectories(_output).Single();
        Assert.That(await File.ReadAllTextAsync(Path.Combine(run, "report.md")), Does.Contain("- Servers: started by the scenario itself").And.Contain("## Redis"));
        using var json = JsonDocument.Parse(await File.ReadAllBytesAsync(Path.Combine(run, "results.json")));
        var results = json.RootElement.GetProperty("sections").EnumerateArray().Single(s => s.GetProperty("id").GetString() == "redis").GetProperty("results");
        var stores = results.GetProperty("stores").EnumerateArray().ToList();
        Assert.That(stores.Select(s => s.GetProperty("store").GetString()), Is.EqualTo(new[] { "in memory", "Redis, one server", "Redis Cluster, 3 shards" }));
        Assert.That(stores.Select(s => s.GetProperty("broadcast").GetProperty("probes").GetArrayLength()), Is.All.GreaterThan(0), "every store was searched");
        var rows = stores.Select(s => s.GetProperty("collaboration").EnumerateArray().Single()).ToList();
        Assert.That(rows.Select(r => r.GetProperty("latency").GetProperty("count").GetInt32()), Is.All.EqualTo(4 * 2 * (2 - 1)), "every receipt of every round");
        Assert.That(rows.Select(r => r.GetProperty("lost").GetInt64() + r.GetProperty("duplicates").GetInt64()), Is.All.Zero);

        // A publish is a lookup, one append to the topic's log and the receive, however many subscribers: three round
        // trips (a sweep or a renewal may fall in the window) and the same commands.
        var commands = results.GetProperty("commands").EnumerateArray().ToList();
        Assert.That(commands.Select(c => c.GetProperty("subscribers").GetInt32()), Is.EqualTo(new[] { 1, 10 }));
        Assert.That(commands.Select(c => c.GetProperty("roundTripsPerPublish").GetDouble()), Is.All.InRange(3.0, 3.5));
        var perPublish = commands.Select(c => c.GetProperty("commandsPerPublish").GetDouble()).ToList();
        Assert.That(perPublish[1], Is.EqualTo(perPublish[0]).Within(2), "ten subscribers cost a publish what one does");
    }

    [Test]
    public async Task AsyncCallers_Quick_RunsEveryVariantSideBySide_AndCountsThreadsAndHandshakes()
    {
        var (exit, console) = await RunAsync("async-callers", "--quick", "--output", _output);

        Assert.That(exit, Is.EqualTo(0), console);
        using var json = JsonDocument.Parse(await File.ReadAllBytesAsync(Path.Combine(Directory.GetDirectories(_output).Single(), "results.json")));
        var results = json.RootElement.GetProperty("sections").EnumerateArray().Single().GetProperty("results").EnumerateArray().ToList();
        Assert.That(results.Select(r => r.GetProperty("variant").GetString()), Is.EqualTo(new[] { "twin", "generated", "hand-written", "twin-openasync" }));
        Assert.That(results.Select(r => r.GetProperty("calls").GetInt64() + r.GetProperty("errors").EnumerateObject().Sum(e => e.Value.GetInt32())), Is.All.EqualTo(60), "every call made, ok or failed");
        Assert.That(results.Select(r => r.GetProperty("maxThreads").GetInt32()), Is.All.Positive);
        var handshakes = results.ToDictionary(r => r.GetProperty("variant").GetString()!, r => r.GetProperty("handshakes").GetInt64());
        Assert.That(handshakes["generated"], Is.EqualTo(60), "a new generated client is a new HTTPS connection");
        // Pooled channels share their factory's connections, about MaxChannels (8) of them; a connection the server or the
        // handler closes under load is made again, so a couple more, never one a call.
        Assert.That(handshakes["twin-openasync"], Is.InRange(1, 12), "pooled channels share their factory's connections");
    }

    [Test]
    public async Task OneCaller_Quick_CountsOpensAndAwaitedOpensAfterTheWarmUp()
    {
        var (exit, console) = await RunAsync("one-caller", "--quick", "--output", _output);

        Assert.That(exit, Is.EqualTo(0), console);
        using var json = JsonDocument.Parse(await File.ReadAllBytesAsync(Path.Combine(Directory.GetDirectories(_output).Single(), "results.json")));
        var result = json.RootElement.GetProperty("sections").EnumerateArray().Single().GetProperty("results");
        Assert.That(result.GetProperty("calls").GetInt64(), Is.Positive);

        // Three 2 s lifetimes of an 8-channel pool: the expired channels were reopened.
        Assert.That(result.GetProperty("opens").GetInt64(), Is.GreaterThanOrEqualTo(8), console);
        Assert.That(result.GetProperty("mostOpensInOneSecond").GetInt32(), Is.InRange(1, result.GetProperty("opens").GetInt64()));
    }

    [TestCase("one-caller --lifetime 0", "--lifetime must be a positive number; got 0.")]
    [TestCase("proxies --calls 0", "--calls must be at least 1; got 0.")]
    [TestCase("proxies --concurrency 8 0", "--concurrency values must be from 1 to 1024; got 0.")]
    [TestCase("proxies --binding carrier-pigeon", "Unknown --binding 'carrier-pigeon'")]
    [TestCase("proxies --service reentrant", "reentrant")]
    [TestCase("proxies --service-time -1", "--service-time must be from 0 to 60000 milliseconds; got -1.")]
    [TestCase("proxies --service-time 60001", "--service-time must be from 0 to 60000 milliseconds; got 60001.")]
    [TestCase("proxies --round-time 0", "--round-time must be from 0.01 to 600 seconds; got 0.")]
    [TestCase("proxies --round-time 601", "--round-time must be from 0.01 to 600 seconds; got 601.")]
    [TestCase("proxies --rounds 201", "--rounds must be from 1 to 200; got 201.")]
    [TestCase("original --calls 0", "--calls must be at least 1; got 0.")]
    [TestCase("broadcast --periods 0", "--periods must be seconds above 0")]
    [TestCase("broadcast --transport carrier-pigeon", "Unknown --transport 'carrier-pigeon'")]
    [TestCase("broadcast --http 3", "Unknown --http '3'; use 1.1 or 2, or both (--http 1.1 2).")]
    [TestCase("broadcast --http 1.1 h2c", "Unknown --http 'h2c'; use 1.1 or 2, or both (--http 1.1 2).")]
    [TestCase("peer --http 1.0", "Unknown --http '1.0'")]
    [TestCase("broadcast --start-clients 500 --max-clients 100", "--start-clients (500) must not exceed --max-clients (100).")]
    [TestCase("broadcast --side-by-side 0", "--side-by-side must be from 1 to 100000 clients; got 0.")]
    [TestCase("broadcast --side-by-side 100001", "--side-by-side must be from 1 to 100000 clients; got 100001.")]
    [TestCase("broadcast --bounds off", "off")]
    [TestCase("collaboration --bounds compare", "--bounds")]
    [TestCase("broadcast --rounds 0", "--rounds must be from 1 to 50; got 0.")]
    [TestCase("broadcast --transport ceiling", "Unknown --transport 'ceiling'; use polling-duplex, signalr-longpolling, signalr-websockets, floor or all.")]
    [TestCase("collaboration --row 1,1,1", "--row must be T,N,D")]
    [TestCase("collaboration --delay-scale -1", "--delay-scale must be a positive number")]
    [TestCase("collaboration --phase sideways", "sideways")]
    [TestCase("collaboration --warmup -1", "--warmup must be from 0 to 100 iterations; got -1.")]
    [TestCase("collaboration --warmup 101", "--warmup must be from 0 to 100 iterations; got 101.")]
    [TestCase("headroom --binding basichttps", "Unknown --binding 'basichttps'; use nettcp, wshttp-sct or all.")]
    [TestCase("headroom --lifetime 0.5", "--lifetime must be from 1 to 86400 seconds, as ChannelLifetime; got 0.5.")]
    [TestCase("headroom --quiet 30 --low-step 20", "--quiet (30 s) must be shorter than --low-step (20 s): the low step settles first.")]
    [TestCase("poll-modes --rounds 0", "--rounds must be from 1 to 100; got 0.")]
    [TestCase("floor --cells carrier-pigeon", "carrier-pigeon")]
    [TestCase("floor --clients 0", "--clients must be from 1 to 5000; got 0.")]
    [TestCase("--quick --publish docs/perf", "a --quick run's figures are not measurements: drop --quick or --publish.")]
    [TestCase("broadcast --quick --publish docs/perf", "drop --quick or --publish.")]
    [TestCase("telepathy", "telepathy")]
    public async Task BadInput_IsRefusedBeforeAnythingStarts_WithAMessageThatSaysWhatIsWrong(string arguments, string expected)
    {
        var (exit, console) = await RunAsync([.. arguments.Split(' '), "--output", _output]);

        Assert.That(exit, Is.Not.EqualTo(0));
        Assert.That(console, Does.Contain(expected));
        Assert.That(Directory.GetDirectories(_output), Is.Empty, "nothing ran, so no report was written");
    }

    [TestCase("broadcast --start-clients 2000")]
    [TestCase("broadcast --start-clients 2000 --max-clients 2000")]
    [TestCase("broadcast --http 1.1 2 --max-clients 40000")]
    [TestCase("broadcast --side-by-side 9000 --rounds 3 --transport floor polling-duplex signalr-longpolling")]
    [TestCase("broadcast --bounds compare --topic-rule compare")]
    [TestCase("collaboration --warmup 0")]
    [TestCase("collaboration --warmup 100")]
    public void GoodInput_Parses_WithoutAnError(string arguments)
    {
        var parse = PerfCli.Build(PeerConsole.Peers).Parse(arguments.Split(' '));

        Assert.That(parse.Errors.Select(e => e.Message), Is.Empty);
    }

    [TestCase("broadcast --transport signalr-longpolling", "Unknown --transport 'signalr-longpolling'; use polling-duplex or all (SignalR and the floor's bare long poll run in the peers console, perf/ChannelPool.Perf.Peers).")]
    [TestCase("collaboration --transport floor", "Unknown --transport 'floor'; use polling-duplex or all")]
    [TestCase("floor", "'floor'")]
    [TestCase("peer", "'peer'")]
    public async Task TheMainConsole_LeavesThePeersToThePeersConsole(string arguments, string expected)
    {
        var (exit, console) = await RunAsync(PerfPeers.None, [.. arguments.Split(' '), "--output", _output]);

        Assert.That(exit, Is.Not.EqualTo(0));
        Assert.That(console, Does.Contain(expected));
        Assert.That(Directory.GetDirectories(_output), Is.Empty, "nothing ran, so no report was written");
    }

    private static Task<(int Exit, string Console)> RunAsync(params string[] arguments) => RunAsync(PeerConsole.Peers, arguments);

    private static async Task<(int Exit, string Console)> RunAsync(PerfPeers peers, params string[] arguments)
    {
        using var output = new StringWriter();
        var exit = await PerfCli.Build(peers).Parse(arguments).InvokeAsync(new InvocationConfiguration { Output = output, Error = output });
        return (exit, output.ToString());
    }
}
