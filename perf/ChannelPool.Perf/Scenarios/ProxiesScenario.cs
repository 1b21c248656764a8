using System.Diagnostics;
using System.Globalization;
using System.ServiceModel;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Servers;
using ChannelPool.Perf.Stats;
using ChannelPool.ServiceModel;
using ChannelPool.Testing.ServiceModel;
using Spectre.Console;

namespace ChannelPool.Perf.Scenarios;

/// <summary>The proxies scenario's settings.</summary>
internal sealed record ProxiesSettings
{
    /// <summary>Gets the calls per cell (the original: 20,000), split evenly over the rounds.</summary>
    public int Calls { get; init; } = 20_000;

    public IReadOnlyList<int> Concurrency { get; init; } = [1, 8, 32];

    public IReadOnlyList<string> Bindings { get; init; } = WcfBinding.All;

    public IReadOnlyList<string> Kinds { get; init; } = ProxiesScenario.AllKinds;

    /// <summary>Gets how many times each cell runs; the kinds run in turn, in reverse order every other round, and each cell sums its rounds.</summary>
    public int Rounds { get; init; } = 2;

    /// <summary>Gets the longest one round of one cell may run before it stops early; <see langword="null"/> for no limit.</summary>
    public TimeSpan? MaxRoundTime { get; init; }

    /// <summary>
    /// Gets the longest each kind's unreported warm-up pass may run, per binding. Long enough for the JIT to finish
    /// tiering the call path up: with 100 calls, the kind that happened to run first paid for it in its first round
    /// (docs/perf/tracking-2026-11-23).
    /// </summary>
    public TimeSpan WarmUpTime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>Gets the most calls each kind's warm-up pass makes, per binding (20,000 was enough for tier-up on net.tcp).</summary>
    public int WarmUpCalls { get; init; } = 20_000;

    /// <summary>Gets whether this is the original's 20,000-call run, reported as times beside the original's.</summary>
    public bool Original { get; init; }
}

/// <summary>One cell: a kind of proxy, on one binding, at one concurrency.</summary>
internal sealed record ProxiesResult(
    string Binding, string Kind, int Concurrency, int Calls, double Seconds, double CallsPerSecond, LatencySummary Latency, double CpuMicrosPerCall,
    double AllocatedBytesPerCall, ServerCountsSnapshot WarmUp, ServerCountsSnapshot DuringCalls);

/// <summary>
/// Per-call, per-call with the WCF factory cache, pooled single-use, pooled reuse and singleton WCF proxies, making
/// the same echo calls on each binding the WCF test services serve, at several concurrencies. The test services run in
/// the server process and count connections, TLS handshakes and sessions, so each cell shows where its opens happened.
/// </summary>
internal sealed class ProxiesScenario(PerfContext context, ProxiesSettings settings)
{
    public const string PerCall = "per-call";
    public const string PerCallCached = "per-call, cached factory";
    public const string PooledSingleUse = "pooled single-use";
    public const string PooledReuse = "pooled reuse";
    public const string PooledReuseShared = "pooled reuse, shared";
    public const string Singleton = "singleton";

    /// <summary>The <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> of <see cref="PooledReuseShared"/>: the most the option allows.</summary>
    public const int SharedLeasesPerChannel = 64;

    /// <summary>Pooled reuse with the other idle order, to measure the default against: selectable with --kind, not in the suite.</summary>
    public const string PooledReuseLeastRecentlyUsed = "pooled reuse, least recently used first";

    public static readonly string[] AllKinds = [PerCall, PerCallCached, PooledSingleUse, PooledReuse, PooledReuseShared, Singleton];

    public static readonly string[] SelectableKinds = [.. AllKinds, PooledReuseLeastRecentlyUsed];

    private static readonly (string Kind, string Minutes)[] OriginalTimes = [(PerCall, "6:31"), (PooledSingleUse, "4:48"), (Singleton, "1:05")];

    public async Task<IReadOnlyList<ProxiesResult>> RunAsync(CancellationToken cancellationToken)
    {
        var endpoints = context.Server.Endpoints.Wcf
            ?? throw new InvalidOperationException("The proxies scenario needs the WCF test services; run it against the embedded servers.");
        var results = new List<ProxiesResult>();
        foreach (var name in settings.Bindings)
        {
            var binding = new WcfBinding(name, endpoints);

            // An unreported pass of every kind first, long enough for tier-up, so JIT and start-up costs land on no kind
            // in particular.
            foreach (var kind in settings.Kinds)
            {
                await RunRoundAsync(binding, kind, 2, settings.WarmUpCalls, new Cell(), "warm-up", settings.WarmUpTime, cancellationToken);
            }

            foreach (var concurrency in settings.Concurrency)
            {
                var cells = settings.Kinds.ToDictionary(kind => kind, _ => new Cell());
                for (var round = 0; round < settings.Rounds; round++)
                {
                    var calls = (settings.Calls / settings.Rounds) + (round < settings.Calls % settings.Rounds ? 1 : 0);
                    var order = round % 2 == 0 ? settings.Kinds : settings.Kinds.Reverse();
                    foreach (var kind in order)
                    {
                        await RunRoundAsync(binding, kind, concurrency, calls, cells[kind], $"round {round + 1} of {settings.Rounds}", settings.MaxRoundTime, cancellationToken);
                    }
                }

                foreach (var kind in settings.Kinds)
                {
                    var result = cells[kind].ToResult(binding.Description, kind, concurrency);
                    results.Add(result);
                    context.Console.MarkupLine(Markup.Escape(
                        $"  {binding.Description}, concurrency {concurrency}, {kind}: {result.CallsPerSecond:N0} calls/s, p50 {result.Latency.P50Ms:0.000} ms, " +
                        $"p99 {result.Latency.P99Ms:0.000} ms, {result.CpuMicrosPerCall:N0} µs CPU/call, {result.AllocatedBytesPerCall:N0} B/call, " +
                        $"{result.DuringCalls.TlsHandshakes:N0} handshakes during calls ({result.WarmUp.TlsHandshakes:N0} in warm-up)" +
                        (result.WarmUp.Negotiations + result.DuringCalls.Negotiations > 0
                            ? $", {result.DuringCalls.Negotiations:N0} negotiations during calls ({result.WarmUp.Negotiations:N0} in warm-up)"
                            : string.Empty)));
                }
            }
        }

        return results;
    }

    private async Task RunRoundAsync(
        WcfBinding binding, string kind, int concurrency, int calls, Cell cell, string round, TimeSpan? maxTime, CancellationToken cancellationToken)
    {
        var label = $"proxies: {binding.Description}, concurrency {concurrency}, {kind} ({round})";
        await context.Console.Status().StartAsync(Markup.Escape(label), async status =>
        {
            var before = await context.Server.GetStatsAsync(cancellationToken);
            await using var proxies = await ProxyKind.StartAsync(kind, binding, concurrency, cancellationToken);
            var warm = await context.Server.GetStatsAsync(cancellationToken);
            cell.WarmUp = Add(cell.WarmUp, binding.CountersOf(warm) - binding.CountersOf(before));

            // Set-up garbage (a pool's 50 handshakes against a singleton's one) is collected before the clock starts,
            // on both sides, so no kind pays inside its round for what it did before it.
            await context.Server.SettleAsync(cancellationToken);
            PerfServer.Settle();

            var cpuBefore = Environment.CpuUsage.TotalTime;
            var allocatedBefore = GC.GetTotalAllocatedBytes(precise: true);
            var started = Stopwatch.GetTimestamp();
            var done = 0;
            var next = -1;
            var deadline = maxTime is { } limit ? started + (long)(limit.TotalSeconds * Stopwatch.Frequency) : long.MaxValue;
            var workers = Enumerable.Range(0, concurrency).Select(_ => Task.Run(
                async () =>
                {
                    for (var i = Interlocked.Increment(ref next); i < calls && Stopwatch.GetTimestamp() < deadline; i = Interlocked.Increment(ref next))
                    {
                        var callStarted = Stopwatch.GetTimestamp();
                        await proxies.CallAsync("ping " + i.ToString(CultureInfo.InvariantCulture), cancellationToken);
                        cell.Latency.RecordSince(callStarted);
                        Interlocked.Increment(ref done);
                    }
                },
                cancellationToken));
            await Task.WhenAll(workers);
            cell.Seconds += Stopwatch.GetElapsedTime(started).TotalSeconds;
            cell.CpuSeconds += (Environment.CpuUsage.TotalTime - cpuBefore).TotalSeconds;
            cell.AllocatedBytes += GC.GetTotalAllocatedBytes(precise: true) - allocatedBefore;
            cell.Calls += done;
            var after = await context.Server.GetStatsAsync(cancellationToken);
            cell.DuringCalls = Add(cell.DuringCalls, binding.CountersOf(after) - binding.CountersOf(warm));
            status.Status(Markup.Escape($"{label}: closing"));
        });
    }

    public static ReportSection Describe(IReadOnlyList<ProxiesResult> results, ProxiesSettings settings, string serverKind)
    {
        var section = new ReportSection(
            "proxies",
            "Proxies: per-call, pooled and singleton WCF proxies",
            $"Echo calls through real WCF proxies (System.ServiceModel 10.1.0), up to {settings.Calls:N0} per cell in {settings.Rounds} interleaved round(s)" +
            (settings.MaxRoundTime is { } limit ? $" of at most {limit.TotalSeconds:0.#} s each" : string.Empty) +
            $", after an unreported warm-up of each kind on each binding ({settings.WarmUpCalls:N0} calls or {settings.WarmUpTime.TotalSeconds:0.#} s, whichever ends first, so the JIT has tiered up)" +
            ", against the WCF test services on 127.0.0.1 (net.tcp with TLS: our [MC-NMF] host; HTTPS: SoapCore on Kestrel). " +
            "Per-call: a new `ClientBase<T>(binding, address)` per call, opened, called and closed; cached factory: the same with `CacheSetting.AlwaysOn`; " +
            "pooled: a new `PooledClientBase<T>` proxy per call over `ServiceChannelPool` with library defaults (50 channels, refill at 25, 4 opens at a time, most recently used idle channel first), " +
            $"single-use (closes the channel after the call) or reuse, and reuse with up to {SharedLeasesPerChannel} proxies sharing a channel (`MaxLeasesPerChannel = {SharedLeasesPerChannel}`, shared); singleton: one opened `ClientBase<T>` every caller shares. Every call is `await EchoAsync`.")
        {
            Results = results,
        };

        section.Tables.Add(new ReportTable(
            "Calls per second, and the ratios the targets are about",
            ["Binding", "Concurrency", .. settings.Kinds, "reuse / singleton", "shared / singleton", "reuse / per-call", "single-use / per-call"],
            [.. Groups(results).Select(g => (IReadOnlyList<string>)[
                g.Key.Binding, Num(g.Key.Concurrency), .. settings.Kinds.Select(k => g.Cell(k) is { } r ? Num(r.CallsPerSecond) : "—"),
                g.Ratio(PooledReuse, Singleton), g.Ratio(PooledReuseShared, Singleton), g.Ratio(PooledReuse, PerCall), g.Ratio(PooledSingleUse, PerCall)])]));

        section.Tables.Add(new ReportTable(
            "Figures",
            ["Binding", "Concurrency", "Kind", "Calls", "Calls/s", "p50 ms", "p99 ms", "CPU µs/call", "Bytes/call", "Handshakes warm-up", "Handshakes calls", "Sessions warm-up", "Sessions calls", "Negotiations warm-up", "Negotiations calls"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Binding, Num(r.Concurrency), r.Kind, Num(r.Calls), Num(r.CallsPerSecond), Num(r.Latency.P50Ms, "0.000"), Num(r.Latency.P99Ms, "0.000"),
                Num(r.CpuMicrosPerCall), Num(r.AllocatedBytesPerCall), Num(r.WarmUp.TlsHandshakes), Num(r.DuringCalls.TlsHandshakes),
                Num(r.WarmUp.SessionsStarted), Num(r.DuringCalls.SessionsStarted), Num(r.WarmUp.Negotiations), Num(r.DuringCalls.Negotiations)])]));

        if (settings.Original)
        {
            section.Tables.Add(new ReportTable(
                $"The original's run: {settings.Calls:N0} calls, one caller (minutes:seconds)",
                ["Binding", .. OriginalTimes.Select(o => o.Kind)],
                [
                    ["2007 pool, wsHttpBinding (the original's figures)", .. OriginalTimes.Select(o => o.Minutes)],
                    .. Groups(results).Where(g => g.Key.Concurrency == 1).Select(g => (IReadOnlyList<string>)[
                        g.Key.Binding, .. OriginalTimes.Select(o => g.Cell(o.Kind) is { } r ? Minutes(r.Seconds) : "—")]),
                ]));
        }

        foreach (var binding in results.Select(r => r.Binding).Distinct())
        {
            var name = binding switch
            {
                var d when d.StartsWith("net.tcp", StringComparison.Ordinal) => WcfBinding.NetTcp,
                var d when d.StartsWith("Basic", StringComparison.Ordinal) => WcfBinding.BasicHttps,
                var d when d.EndsWith("SecureConversation", StringComparison.Ordinal) => WcfBinding.WsHttpSecureConversation,
                _ => WcfBinding.WsHttpUserName,
            };
            var cells = results.Where(r => r.Binding == binding).ToList();
            section.Charts.Add(new Chart(
                $"proxies-{name}-throughput",
                $"{binding}: calls per second",
                ChartKind.GroupedBar,
                "Concurrency",
                "Calls per second",
                [.. cells.Select(r => new ChartPoint(r.Kind, $"concurrency {r.Concurrency}", r.Concurrency, r.CallsPerSecond))],
                LogScaleY: true));
            section.Charts.Add(new Chart(
                $"proxies-{name}-p99",
                $"{binding}: p99 latency",
                ChartKind.GroupedBar,
                "Concurrency",
                "p99 latency (ms)",
                [.. cells.Select(r => new ChartPoint(r.Kind, $"concurrency {r.Concurrency}", r.Concurrency, Math.Max(r.Latency.P99Ms, 0.001)))],
                LogScaleY: true));
        }

        foreach (var g in Groups(results))
        {
            var where = $"{g.Key.Binding}, concurrency {g.Key.Concurrency}";
            AddCheck(section, $"Pooled reuse ≥ 0.95× singleton ({where})", g, PooledReuse, Singleton, 0.95, strict: false);
            AddCheck(section, $"Pooled reuse, shared ≥ 0.95× singleton ({where})", g, PooledReuseShared, Singleton, 0.95, strict: false);
            if (g.Key.Binding.StartsWith("net.tcp", StringComparison.Ordinal))
            {
                AddCheck(section, $"Pooled reuse ≥ 3× per-call ({where})", g, PooledReuse, PerCall, 3, strict: false);
                AddCheck(section, $"Pooled single-use > 1.36× per-call, the original's ratio ({where})", g, PooledSingleUse, PerCall, 1.36, strict: true);
            }
        }

        section.Notes.Add(
            "CPU µs/call and Bytes/call are the client process's, the pool's background opens and closes included" +
            (serverKind == "in-process" ? "; with --server in-process they include the servers' work too." : "; the servers run in their own process and are not counted."));
        section.Notes.Add("Handshakes, sessions and negotiations are the test services' own counts (TLS handshakes completed; net.tcp sessions started; HTTP has no sessions; security context tokens issued on WSHttp SecureConversation), during the proxy's set-up (pool warm-up, singleton open) and during the calls.");
        return section;
    }

    private static void AddCheck(ReportSection section, string target, Group g, string kind, string baseline, double goal, bool strict)
    {
        if (g.Cell(kind) is not { } a || g.Cell(baseline) is not { } b || b.CallsPerSecond <= 0)
        {
            return;
        }

        var ratio = a.CallsPerSecond / b.CallsPerSecond;
        var met = strict ? ratio > goal : ratio >= goal;
        section.Targets.Add(new TargetCheck(target, ratio.ToString("0.00×", CultureInfo.InvariantCulture), met, met ? null : $"{(goal - ratio) / goal:P0} below {goal:0.##}×"));
    }

    private static IEnumerable<Group> Groups(IReadOnlyList<ProxiesResult> results) =>
        results.GroupBy(r => (r.Binding, r.Concurrency)).Select(g => new Group(g.Key, [.. g]));

    private static ServerCountsSnapshot Add(ServerCountsSnapshot a, ServerCountsSnapshot b) => new(
        a.Connections + b.Connections, a.TlsHandshakes + b.TlsHandshakes, a.SessionsStarted + b.SessionsStarted, a.SessionsEnded + b.SessionsEnded, a.Calls + b.Calls, a.EndRecords + b.EndRecords,
        a.Negotiations + b.Negotiations);

    private static string Minutes(double seconds) => TimeSpan.FromSeconds(seconds).ToString(seconds >= 3600 ? @"h\:mm\:ss" : @"m\:ss\.f", CultureInfo.InvariantCulture);

    private static string Num(double value, string format = "N0") => value.ToString(format, CultureInfo.InvariantCulture);

    private sealed record Group((string Binding, int Concurrency) Key, IReadOnlyList<ProxiesResult> Cells)
    {
        public ProxiesResult? Cell(string kind) => Cells.FirstOrDefault(c => c.Kind == kind);

        public string Ratio(string kind, string baseline) =>
            Cell(kind) is { } a && Cell(baseline) is { CallsPerSecond: > 0 } b ? (a.CallsPerSecond / b.CallsPerSecond).ToString("0.00×", CultureInfo.InvariantCulture) : "—";
    }

    /// <summary>One cell's totals over its rounds.</summary>
    private sealed class Cell
    {
        public LatencyRecorder Latency { get; } = new();

        public int Calls { get; set; }

        public double Seconds { get; set; }

        public double CpuSeconds { get; set; }

        public long AllocatedBytes { get; set; }

        public ServerCountsSnapshot WarmUp { get; set; }

        public ServerCountsSnapshot DuringCalls { get; set; }

        public ProxiesResult ToResult(string binding, string kind, int concurrency) => new(
            binding, kind, concurrency, Calls, Seconds, Calls / Seconds, Latency.Summarize(), CpuSeconds * 1e6 / Calls, (double)AllocatedBytes / Calls, WarmUp, DuringCalls);
    }

    /// <summary>How one kind of proxy is set up, called and torn down.</summary>
    private sealed class ProxyKind(Func<string, CancellationToken, Task> call, Func<ValueTask> stop) : IAsyncDisposable
    {
        public static async Task<ProxyKind> StartAsync(string kind, WcfBinding binding, int concurrency, CancellationToken cancellationToken)
        {
            var wcfBinding = binding.CreateBinding();
            switch (kind)
            {
                case PerCall:
                    return new ProxyKind(
                        async (message, _) =>
                        {
                            var client = new EchoClient(wcfBinding, binding.Address);
                            binding.Configure(client.ClientCredentials);
                            await CallAndCloseAsync(client, client.EchoAsync(message));
                        },
                        () => ValueTask.CompletedTask);
                case PerCallCached:
                {
                    // AlwaysOn makes every proxy built with this binding object and address share one cached, opened
                    // ChannelFactory, whose credentials are then read-only: only the first proxy can set them.
                    var first = new CachedEchoClient(wcfBinding, binding.Address);
                    binding.Configure(first.ClientCredentials);
                    await Task.Factory.FromAsync(((ICommunicationObject)first).BeginOpen, ((ICommunicationObject)first).EndOpen, state: null);
                    await CloseAsync(first);
                    return new ProxyKind(
                        async (message, _) =>
                        {
                            var client = new CachedEchoClient(wcfBinding, binding.Address);
                            if (client.ChannelFactory.State == CommunicationState.Created)
                            {
                                binding.Configure(client.ClientCredentials);
                            }

                            await CallAndCloseAsync(client, client.EchoAsync(message));
                        },
                        () => ValueTask.CompletedTask);
                }

                case Singleton:
                {
                    var client = new EchoClient(wcfBinding, binding.Address);
                    binding.Configure(client.ClientCredentials);
                    ICommunicationObject communication = client;
                    await Task.Factory.FromAsync(communication.BeginOpen, communication.EndOpen, state: null);
                    return new ProxyKind((message, _) => client.EchoAsync(message), () => new ValueTask(CloseAsync(client)));
                }

                default:
                {
                    // Library defaults, as an application that swapped its proxy's base class would run.
                    var options = new ChannelPoolOptions
                    {
                        Name = $"perf-{binding.Name}-{kind.Replace(' ', '-')}-{concurrency}",
                        LeaseMode = kind == PooledSingleUse ? LeaseMode.SingleUse : LeaseMode.Reuse,
                        IdleOrder = kind == PooledReuseLeastRecentlyUsed ? IdleOrder.LeastRecentlyUsed : IdleOrder.MostRecentlyUsed,
                        MaxLeasesPerChannel = kind == PooledReuseShared ? SharedLeasesPerChannel : 1,
                    };
                    var pool = new ServiceChannelPool<IEchoClient>(wcfBinding, binding.Address, options, factory => binding.Configure(factory.Credentials));
                    await pool.WarmUpAsync(pool.PoolSize, cancellationToken);
                    return new ProxyKind(
                        async (message, token) =>
                        {
                            var proxy = new PooledEchoClient(pool);
                            try
                            {
                                await proxy.OpenAsync(token);
                                await proxy.EchoAsync(message);
                            }
                            finally
                            {
                                proxy.Close();
                            }
                        },
                        pool.DisposeAsync);
                }
            }
        }

        public Task CallAsync(string message, CancellationToken cancellationToken) => call(message, cancellationToken);

        public ValueTask DisposeAsync() => stop();

        private static async Task CallAndCloseAsync(ICommunicationObject client, Task call)
        {
            try
            {
                await call;
            }
            catch
            {
                client.Abort();
                throw;
            }

            await CloseAsync(client);
        }

        private static Task CloseAsync(ICommunicationObject client) => Task.Factory.FromAsync(client.BeginClose, client.EndClose, state: null);
    }
}
