using System.CommandLine;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Proxies;

/// <summary>
/// The <c>proxies</c> command: per-call, per-call with the WCF factory cache, pooled single-use, pooled reuse (alone
/// and shared) and singleton WCF proxies on each binding the WCF test services serve, at several concurrencies.
/// Targets: pooled reuse ≥ 0.95× singleton everywhere; on net.tcp, reuse ≥ 3× per-call and single-use > 1.36× per-call.
/// </summary>
internal sealed class ProxiesScenario : PerfScenario<ProxiesSettings, IReadOnlyList<ProxiesResult>>
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

    private readonly ProxiesOptions _options = new();

    public override string Name => "proxies";

    public override string Description =>
        "Per-call, per-call with a cached factory, pooled single-use, pooled reuse (alone and shared) and singleton WCF proxies on WSHttp with a security context (the original's scenario), net.tcp (TLS), BasicHttps and WSHttp with UserName, " +
        "at several concurrencies: calls/s, latency percentiles, CPU and bytes per call, server handshakes and sessions.";

    public override void AddOptions(Command command) => _options.AddTo(command, withConcurrency: true);

    /// <summary>The suite's proxies: every binding and kind at 1, 8 and 32, two interleaved rounds of at most 1.5 s per cell.</summary>
    public override ProxiesSettings SuiteSettings(bool quick) => quick
        ? ProxiesOptions.QuickWarmUp(new() { Calls = 40, Concurrency = [1, 8], Rounds = 1 })
        : new() { Calls = 4_000, Rounds = 2, MaxRoundTime = TimeSpan.FromSeconds(1.5), WarmUpTime = TimeSpan.FromSeconds(1.5) };

    public override ProxiesSettings ReadSettings(ParseResult parse, bool quick)
    {
        var settings = new ProxiesSettings
        {
            Calls = Pick(parse, _options.Calls, quick, 40),
            Concurrency = Pick(parse, _options.Concurrency, quick, [1, 8]),
            Bindings = _options.Bindings(parse),
            Kinds = _options.Kinds(parse),
            Rounds = Pick(parse, _options.Rounds, quick, 1),
        };
        return quick ? ProxiesOptions.QuickWarmUp(settings) : settings;
    }

    public override Task<IReadOnlyList<ProxiesResult>> RunAsync(PerfContext context, ProxiesSettings settings, CancellationToken cancellationToken) =>
        new ProxiesRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(IReadOnlyList<ProxiesResult> results, ProxiesSettings settings, PerfContext context)
    {
        var section = NewSection("Proxies: per-call, pooled and singleton WCF proxies", Describe(settings), results);
        AddFigures(section, results, settings, context.Server.Kind);
        return section;
    }

    /// <summary>What the proxies measured and how, for the section's paragraph.</summary>
    /// <param name="settings">The run's settings.</param>
    /// <returns>The paragraph.</returns>
    internal static string Describe(ProxiesSettings settings) =>
        $"Echo calls through real WCF proxies (System.ServiceModel 10.1.0), up to {settings.Calls:N0} per cell in {settings.Rounds} interleaved round(s)" +
        (settings.MaxRoundTime is { } limit ? $" of at most {limit.TotalSeconds:0.#} s each" : string.Empty) +
        $", after an unreported warm-up of each kind on each binding ({settings.WarmUpCalls:N0} calls or {settings.WarmUpTime.TotalSeconds:0.#} s, whichever ends first, so the JIT has tiered up)" +
        ", against the WCF test services on 127.0.0.1 (net.tcp with TLS: our [MC-NMF] host; HTTPS: SoapCore on Kestrel). " +
        "Per-call: a new `ClientBase<T>(binding, address)` per call, opened, called and closed; cached factory: the same with `CacheSetting.AlwaysOn`; " +
        "pooled: a new `PooledClientBase<T>` proxy per call over `ServiceChannelPool` with library defaults (50 channels, refill at 25, 4 opens at a time, most recently used idle channel first), " +
        $"single-use (closes the channel after the call) or reuse, and reuse with up to {SharedLeasesPerChannel} proxies sharing a channel (`MaxLeasesPerChannel = {SharedLeasesPerChannel}`, shared); singleton: one opened `ClientBase<T>` every caller shares. Every call is `await EchoAsync`.";

    /// <summary>Adds the proxies' tables, charts, target checks and notes to <paramref name="section"/>; the original command adds its own table to the same.</summary>
    /// <param name="section">The section.</param>
    /// <param name="results">Every cell.</param>
    /// <param name="settings">The run's settings.</param>
    /// <param name="serverKind">How the servers ran, which decides what the CPU figures include.</param>
    internal static void AddFigures(ReportSection section, IReadOnlyList<ProxiesResult> results, ProxiesSettings settings, string serverKind)
    {
        section.Tables.Add(new ReportTable(
            "Calls per second, and the ratios the targets are about",
            ["Binding", "Concurrency", .. settings.Kinds, "reuse / singleton", "shared / singleton", "reuse / per-call", "single-use / per-call"],
            [.. Groups(results).Select(g => (IReadOnlyList<string>)[
                g.Key.Binding, Num(g.Key.Concurrency), .. settings.Kinds.Select(k => g.Cell(k) is { } r ? Num(r.CallsPerSecond) : "—"),
                g.RatioText(PooledReuse, Singleton), g.RatioText(PooledReuseShared, Singleton), g.RatioText(PooledReuse, PerCall), g.RatioText(PooledSingleUse, PerCall)])]));

        section.Tables.Add(new ReportTable(
            "Figures",
            ["Binding", "Concurrency", "Kind", "Calls", "Calls/s", "p50 ms", "p99 ms", "CPU µs/call", "Bytes/call", "Handshakes warm-up", "Handshakes calls", "Sessions warm-up", "Sessions calls", "Negotiations warm-up", "Negotiations calls"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Binding, Num(r.Concurrency), r.Kind, Num(r.Calls), Num(r.CallsPerSecond), Num(r.Latency.P50Ms, "0.000"), Num(r.Latency.P99Ms, "0.000"),
                Num(r.CpuMicrosPerCall), Num(r.AllocatedBytesPerCall), Num(r.WarmUp.TlsHandshakes), Num(r.DuringCalls.TlsHandshakes),
                Num(r.WarmUp.SessionsStarted), Num(r.DuringCalls.SessionsStarted), Num(r.WarmUp.Negotiations), Num(r.DuringCalls.Negotiations)])]));

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
    }

    /// <summary>The cells grouped by binding and concurrency, in the order they ran.</summary>
    /// <param name="results">Every cell.</param>
    /// <returns>One group per binding and concurrency.</returns>
    internal static IEnumerable<CellGroup> Groups(IReadOnlyList<ProxiesResult> results) =>
        results.GroupBy(r => (r.Binding, r.Concurrency)).Select(g => new CellGroup(g.Key, [.. g]));

    private static void AddCheck(ReportSection section, string target, CellGroup g, string kind, string baseline, double goal, bool strict)
    {
        if (g.Ratio(kind, baseline) is not { } ratio)
        {
            return;
        }

        var met = strict ? ratio > goal : ratio >= goal;
        section.Targets.Add(new TargetCheck(target, Ratio(ratio), met, met ? null : $"{Percent((goal - ratio) / goal)} below {Num(goal, "0.##")}×"));
    }

    /// <summary>The kinds measured on one binding at one concurrency.</summary>
    internal sealed record CellGroup((string Binding, int Concurrency) Key, IReadOnlyList<ProxiesResult> Cells)
    {
        public ProxiesResult? Cell(string kind) => Cells.FirstOrDefault(c => c.Kind == kind);

        public double? Ratio(string kind, string baseline) =>
            Cell(kind) is { } a && Cell(baseline) is { CallsPerSecond: > 0 } b ? a.CallsPerSecond / b.CallsPerSecond : null;

        public string RatioText(string kind, string baseline) => Ratio(kind, baseline) is { } ratio ? ReportFormat.Ratio(ratio) : "—";
    }
}
