using System.CommandLine;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Testing.ServiceModel;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Proxies;

/// <summary>
/// The <c>proxies</c> command: per-call, per-call with the WCF factory cache, pooled single-use, pooled reuse (alone
/// and shared) and singleton WCF proxies on each binding the WCF test services serve, at several concurrencies; the
/// bindings with sessions run against both service settings (a session's calls at once, or one at a time as WCF's
/// defaults serve them). Targets, under every setting: pooled reuse ≥ 0.95× singleton and ≥ 3× per-call; on net.tcp,
/// single-use > 1.36× per-call.
/// </summary>
internal sealed class ProxiesScenario : PerfScenario<ProxiesSettings, IReadOnlyList<ProxiesResult>>
{
    public const string PerCall = "per-call";
    public const string PerCallCached = "per-call, cached factory";
    public const string PooledSingleUse = "pooled single-use";

    /// <summary>Pooled reuse with the library's defaults: on net.tcp, up to 16 leases share a channel adaptively.</summary>
    public const string PooledReuse = "pooled reuse";

    /// <summary>Pooled reuse with a channel a lease (<c>MaxLeasesPerChannel = 1</c>), the default before adaptive sharing.</summary>
    public const string PooledReuseExclusive = "pooled reuse, exclusive";

    /// <summary>Pooled reuse with leases always sharing, up to <see cref="SharedLeasesPerChannel"/> a channel.</summary>
    public const string PooledReuseShared = "pooled reuse, shared";
    public const string Singleton = "singleton";

    /// <summary>The <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> of <see cref="PooledReuseShared"/> (<see cref="LeaseSharing.Always"/>) unless set: the most the option allows.</summary>
    public const int SharedLeasesPerChannel = 64;

    /// <summary>Pooled reuse with the other idle order, to measure the default against: selectable with --kind, not in the suite.</summary>
    public const string PooledReuseLeastRecentlyUsed = "pooled reuse, least recently used first";

    /// <summary>
    /// Pooled reuse with adaptive sharing (the default) up to the shared kind's leases per channel rather than the
    /// binding's default: selectable with --kind, not in the suite.
    /// </summary>
    public const string PooledReuseAdaptive = "pooled reuse, adaptive";

    public static readonly string[] AllKinds = [PerCall, PerCallCached, PooledSingleUse, PooledReuse, PooledReuseExclusive, PooledReuseShared, Singleton];

    public static readonly string[] SelectableKinds = [.. AllKinds, PooledReuseLeastRecentlyUsed, PooledReuseAdaptive];

    private readonly ProxiesOptions _options = new();

    public override string Name => "proxies";

    public override string Description =>
        "Per-call, per-call with a cached factory, pooled single-use, pooled reuse (alone and shared) and singleton WCF proxies on WSHttp with a security context (the original's scenario), net.tcp (TLS), BasicHttps and WSHttp with UserName, " +
        "at several concurrencies, the bindings with sessions against a service that serves a session's calls at once and one that serves them one at a time (WCF's defaults): calls/s, latency percentiles, CPU and bytes per call, server handshakes and sessions.";

    public override void AddOptions(Command command) => _options.AddTo(command, withConcurrency: true);

    /// <summary>
    /// The suite's proxies. First every binding and kind at 1, 8 and 32 callers against a service that answers at once,
    /// the bindings with sessions under both service settings: the cost of the calls themselves. Then the bindings with
    /// sessions again, both settings, with a service time of <see cref="SuiteServiceTime"/>, at 8 and 32 callers: what
    /// WCF's defaults do to callers sharing a session. Paired rounds (<see cref="PairedRatio"/>): twelve a cell with
    /// a turn of at most 0.1 s per kind (per-call kinds 0.05 s) in the first pass, four of 0.3 s in the second.
    /// </summary>
    public override ProxiesSettings SuiteSettings(bool quick) => quick
        ? ProxiesOptions.QuickWarmUp(new() { Calls = 40, Concurrency = [1, 8], Rounds = 1, MorePasses = [ServiceTimePass(quick: true)] })
        : new()
        {
            // Time ends a turn, not the count: the rounds pair up only if each kind's turn is long enough to hold
            // many calls and short enough that the machine's load does not drift within a round.
            Calls = 60_000,
            Rounds = 12,
            MaxRoundTime = TimeSpan.FromSeconds(0.1),
            PerCallRoundTime = TimeSpan.FromSeconds(0.05),
            CellWarmUpTime = TimeSpan.FromSeconds(0.2),
            WarmUpTime = TimeSpan.FromSeconds(1.5),
            MorePasses = [ServiceTimePass(quick: false)],
        };

    /// <summary>The service time of the suite's second pass: a short database call's worth.</summary>
    public static readonly TimeSpan SuiteServiceTime = TimeSpan.FromMilliseconds(2);

    public override ProxiesSettings ReadSettings(ParseResult parse, bool quick)
    {
        if (parse.GetValue(_options.Suite))
        {
            return SuiteSettings(quick);
        }

        var settings = new ProxiesSettings
        {
            Calls = Pick(parse, _options.Calls, quick, 40),
            Concurrency = Pick(parse, _options.Concurrency, quick, [1, 8]),
            Bindings = _options.Bindings(parse),
            Kinds = _options.Kinds(parse),
            Rounds = Pick(parse, _options.Rounds, quick, 1),
            MaxRoundTime = _options.RoundTime(parse),
            Services = _options.Services(parse),
            ServiceTime = _options.ServiceTime(parse),
            SharedLeasesPerChannel = parse.GetValue(_options.SharedLeasesPerChannel),
        };
        return quick ? ProxiesOptions.QuickWarmUp(settings) : settings;
    }

    public override async Task<IReadOnlyList<ProxiesResult>> RunAsync(PerfContext context, ProxiesSettings settings, CancellationToken cancellationToken)
    {
        var results = new List<ProxiesResult>();
        foreach (var pass in settings.Passes)
        {
            results.AddRange(await new ProxiesRun(context, pass).RunAsync(cancellationToken));
        }

        return results;
    }

    public override ReportSection Report(IReadOnlyList<ProxiesResult> results, ProxiesSettings settings, PerfContext context)
    {
        var section = NewSection("Proxies: per-call, pooled and singleton WCF proxies", Describe(settings), results);
        AddFigures(section, results, settings, context.Server.Kind);
        return section;
    }

    /// <summary>Whether a kind's sessions carry one call each, so how the service serves a session's calls cannot change it.</summary>
    /// <param name="kind">The kind of proxy.</param>
    /// <returns>True for per-call proxies (a session each) and single-use pooled channels (closed after their call).</returns>
    public static bool OneCallPerSession(string kind) => kind is PerCall or PerCallCached or PooledSingleUse;

    /// <summary>What the proxies measured and how, for the section's paragraph.</summary>
    /// <param name="settings">The run's settings.</param>
    /// <returns>The paragraph.</returns>
    internal static string Describe(ProxiesSettings settings) =>
        $"Echo calls through real WCF proxies (System.ServiceModel 10.1.0), up to {settings.Calls:N0} per cell in {settings.Rounds} paired round(s): each round gives every kind one turn" +
        (settings.MaxRoundTime is { } limit ? $" of at most {limit.TotalSeconds:0.##} s" : string.Empty) +
        (settings.RoundTimeOf(PerCall) is { } perCall && perCall != settings.MaxRoundTime ? $" ({perCall.TotalSeconds:0.##} s for the per-call kinds, which are 10 to 200 times slower)" : string.Empty) +
        ", in reverse order every other round, every kind's proxy set up once per cell and warmed at the cell's concurrency before the first round; " +
        "a ratio is the median of the rounds' ratios (each from two turns that ran next to each other, under the same load), with the middle half of them in brackets" +
        $", after an unreported warm-up of each kind on each binding ({settings.WarmUpCalls:N0} calls or {settings.WarmUpTime.TotalSeconds:0.#} s, whichever ends first, so the JIT has tiered up)" +
        ", against the WCF test services on 127.0.0.1 (net.tcp with TLS: our [MC-NMF] host; HTTPS: SoapCore on Kestrel). " +
        ServiceText(settings) +
        "Per-call: a new `ClientBase<T>(binding, address)` per call, opened, called and closed; cached factory: the same with `CacheSetting.AlwaysOn`; " +
        "pooled: a new `PooledClientBase<T>` proxy per call over `ServiceChannelPool` with library defaults (50 channels, refill at 25, 4 opens at a time, most recently used idle channel first), " +
        "single-use (closes the channel after the call) or reuse (on net.tcp up to 16 proxies share a channel while that is no slower: `LeaseSharing.Adaptive`, the default; on the HTTP bindings a channel a proxy), " +
        $"reuse with a channel a proxy (`MaxLeasesPerChannel = 1`, exclusive), and reuse with up to {settings.SharedLeasesPerChannel} proxies always sharing a channel (`MaxLeasesPerChannel = {settings.SharedLeasesPerChannel}`, `LeaseSharing.Always`, shared); singleton: one opened `ClientBase<T>` every caller shares. " +
        "A reuse pool is grown to the size its callers ask for (the refill opens channels while they are leased) before the first round, as an app's pool is after its first second at that load; a single-use pool refills between its turns, outside the clock. " +
        (settings.ServiceTime > TimeSpan.Zero ? $"Every call is `await EchoAfterAsync(text, {settings.ServiceTime.TotalMilliseconds:0})`." : "Every call is `await EchoAsync`.") +
        string.Concat(settings.MorePasses.Select(pass =>
            $" Then {string.Join(" and ", pass.Bindings)} again at {string.Join(", ", pass.Concurrency)} callers ({string.Join(", ", pass.Kinds)}), " +
            $"under both settings, {pass.Calls:N0} calls a cell in {pass.Rounds} round(s)" +
            (pass.MaxRoundTime is { } passLimit ? $" of at most {passLimit.TotalSeconds:0.#} s" : string.Empty) +
            $" after a {pass.WarmUpTime.TotalSeconds:0.#}-s warm-up, " +
            $"with the service spending {pass.ServiceTime.TotalMilliseconds:0} ms on each call (`EchoAfterAsync`), waiting as on a database, no CPU: " +
            "with one caller both settings are the same thing, one call at a time."));

    private static string ServiceText(ProxiesSettings settings) =>
        "The bindings with sessions (net.tcp; WSHttp with a security context, whose security session is the session) run against " +
        (settings.Services.Count > 1 ? "each service setting: " : "one service setting: ") +
        string.Join("; ", settings.Services.Select(s => s == ServiceConcurrency.Single
            ? $"{WcfBinding.ServiceLabel(s)}, a session's calls one at a time in arrival order, the next taken only after the last reply, as WCF serves with its defaults (`InstanceContextMode.PerSession`, `ConcurrencyMode.Single`)"
            : $"{WcfBinding.ServiceLabel(s)}, a session's calls at once (`ConcurrencyMode.Multiple`)")) +
        $"; the others have no session and are served at once ({WcfBinding.NoSession}). " +
        (settings.Services.Count > 1
            ? "Per-call and pooled single-use proxies carry one call per session, served the same under either setting, so they run under the first setting only and their figures stand for both. "
            : string.Empty) +
        (settings.ServiceTime > TimeSpan.Zero
            ? $"The service spends {settings.ServiceTime.TotalMilliseconds:0} ms on each call, waiting as on a database (no CPU). "
            : "The service answers each call at once (no service time), so the figures are the cost of the calls themselves. ");

    private static ProxiesSettings ServiceTimePass(bool quick) => new()
    {
        Bindings = [.. WcfBinding.All.Where(WcfBinding.HasSessions)],
        Kinds = [PooledReuse, PooledReuseExclusive, PooledReuseShared, Singleton],
        Concurrency = quick ? [8] : [8, 32],
        ServiceTime = SuiteServiceTime,
        Calls = quick ? 40 : 8_000,
        Rounds = quick ? 1 : 4,

        // Calls that wait on the service run at a steady rate: 0.3 s a turn is plenty (0.5 s before the exclusive
        // kind joined; the middle half of the rounds' ratios stayed within 1% at 8 callers).
        MaxRoundTime = quick ? null : TimeSpan.FromSeconds(0.3),

        // The call path is warm from the first pass; this warms EchoAfter's.
        WarmUpCalls = quick ? 40 : 2_000,
        WarmUpTime = TimeSpan.FromSeconds(0.5),
    };

    /// <summary>Adds the proxies' tables, charts, target checks and notes to <paramref name="section"/>; the original command adds its own table to the same.</summary>
    /// <param name="section">The section.</param>
    /// <param name="results">Every cell.</param>
    /// <param name="settings">The run's settings.</param>
    /// <param name="serverKind">How the servers ran, which decides what the CPU figures include.</param>
    internal static void AddFigures(ReportSection section, IReadOnlyList<ProxiesResult> results, ProxiesSettings settings, string serverKind)
    {
        var kinds = settings.Passes.SelectMany(p => p.Kinds).Distinct().ToList();
        var groups = Groups(results).ToList();
        section.Tables.Add(new ReportTable(
            "Calls per second, and the ratios the targets are about",
            ["Binding", "Service", "Service time ms", "Concurrency", .. kinds, "reuse / singleton", "exclusive / singleton", "shared / singleton", "reuse / per-call", "single-use / per-call"],
            [.. groups.Select(g => (IReadOnlyList<string>)[
                g.Key.Binding, g.Key.Service, Num(g.Key.ServiceTimeMs), Num(g.Key.Concurrency), .. kinds.Select(k => g.Cell(k) is { } r ? Num(r.CallsPerSecond) : "—"),
                g.RatioText(PooledReuse, Singleton), g.RatioText(PooledReuseExclusive, Singleton), g.RatioText(PooledReuseShared, Singleton), g.RatioText(PooledReuse, PerCall),
                g.RatioText(PooledSingleUse, PerCall)])]));

        section.Tables.Add(new ReportTable(
            "Figures",
            ["Binding", "Service", "Service time ms", "Concurrency", "Kind", "Calls", "Calls/s", "p50 ms", "p99 ms", "CPU µs/call", "Server CPU µs/call", "Bytes/call", "Handshakes warm-up", "Handshakes calls", "Sessions warm-up", "Sessions calls", "Negotiations warm-up", "Negotiations calls"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Binding, r.Service, Num(r.ServiceTimeMs), Num(r.Concurrency), r.Kind, Num(r.Calls), Num(r.CallsPerSecond), Num(r.Latency.P50Ms, "0.000"), Num(r.Latency.P99Ms, "0.000"),
                Num(r.CpuMicrosPerCall), double.IsFinite(r.ServerCpuMicrosPerCall) ? Num(r.ServerCpuMicrosPerCall) : "—", Num(r.AllocatedBytesPerCall), Num(r.WarmUp.TlsHandshakes), Num(r.DuringCalls.TlsHandshakes),
                Num(r.WarmUp.SessionsStarted), Num(r.DuringCalls.SessionsStarted), Num(r.WarmUp.Negotiations), Num(r.DuringCalls.Negotiations)])]));

        // One chart pair per binding and service time; within it a group of bars per concurrency and service setting,
        // the two settings side by side.
        foreach (var cells in results.GroupBy(r => (r.Binding, r.ServiceTimeMs)))
        {
            var name = CommandName(cells.Key.Binding) + (cells.Key.ServiceTimeMs > 0 ? $"-{cells.Key.ServiceTimeMs:0}ms" : string.Empty);
            var title = cells.Key.Binding + (cells.Key.ServiceTimeMs > 0 ? $", {cells.Key.ServiceTimeMs:0} ms a call" : string.Empty);
            var bothSettings = cells.Select(r => r.Service).Distinct().Count() > 1;
            string Category(ProxiesResult r) => bothSettings ? $"c = {r.Concurrency}, {ShortService(r.Service)}" : $"concurrency {r.Concurrency}";
            var axis = bothSettings ? "Concurrency and service setting" : "Concurrency";

            // Bar groups in order of concurrency, each setting beside the other (a stable sort keeps the settings' order).
            var ordered = cells.OrderBy(r => r.Concurrency).ToList();
            section.Charts.Add(new Chart(
                $"proxies-{name}-throughput",
                $"{title}: calls per second",
                ChartKind.GroupedBar,
                axis,
                "Calls per second",
                [.. ordered.Select(r => new ChartPoint(r.Kind, Category(r), r.Concurrency, r.CallsPerSecond))],
                LogScaleY: true));
            section.Charts.Add(new Chart(
                $"proxies-{name}-p99",
                $"{title}: p99 latency",
                ChartKind.GroupedBar,
                axis,
                "p99 latency (ms)",
                [.. ordered.Select(r => new ChartPoint(r.Kind, Category(r), r.Concurrency, Math.Max(r.Latency.P99Ms, 0.001)))],
                LogScaleY: true));
        }

        // The targets hold under every service setting: a miss under one is a miss.
        foreach (var g in groups)
        {
            var where = $"{g.Key.Binding}, " +
                (g.Key.Service == WcfBinding.NoSession ? string.Empty : $"{g.Key.Service}, ") +
                (g.Key.ServiceTimeMs > 0 ? $"{g.Key.ServiceTimeMs:0} ms a call, " : string.Empty) +
                $"concurrency {g.Key.Concurrency}";
            AddCheck(section, $"Pooled reuse ≥ 0.95× singleton ({where})", g, PooledReuse, Singleton, 0.95, strict: false);
            AddCheck(section, $"Pooled reuse, shared ≥ 0.95× singleton ({where})", g, PooledReuseShared, Singleton, 0.95, strict: false);
            AddCheck(section, $"Pooled reuse ≥ 3× per-call ({where})", g, PooledReuse, PerCall, 3, strict: false);
            if (g.Key.Binding.StartsWith("net.tcp", StringComparison.Ordinal))
            {
                AddCheck(section, $"Pooled single-use > 1.36× per-call, the original's ratio ({where})", g, PooledSingleUse, PerCall, 1.36, strict: true);
            }
        }

        if (groups.Any(g => g.Fallback is not null))
        {
            section.Notes.Add("Per-call and pooled single-use figures are measured once per binding, concurrency and service time, under the first service setting: their sessions carry one call each, which either setting serves alike. The rows of the other setting show the same figures, and their ratios use them.");
        }

        section.Notes.Add(
            "CPU µs/call and Bytes/call are the client process's, the pool's background opens and closes included" +
            (serverKind == "in-process"
                ? "; with --server in-process they include the servers' work too, as does Server CPU µs/call."
                : "; Server CPU µs/call is the server process's, which also runs the perf console's other endpoints (idle during these rounds)."));
        section.Notes.Add("Handshakes, sessions and negotiations are the test services' own counts (TLS handshakes completed; net.tcp sessions started; HTTP has no sessions; security context tokens issued on WSHttp SecureConversation), during the proxy's set-up (pool warm-up and growth, singleton open) and during the calls.");
    }

    /// <summary>
    /// The cells grouped by binding, service setting, service time and concurrency, in the order they ran; a group
    /// whose one-call-per-session kinds ran under another setting borrows them from that setting's group.
    /// </summary>
    /// <param name="results">Every cell.</param>
    /// <returns>One group per binding, service setting, service time and concurrency.</returns>
    internal static IEnumerable<CellGroup> Groups(IReadOnlyList<ProxiesResult> results)
    {
        var groups = results.GroupBy(r => (r.Binding, r.Service, r.ServiceTimeMs, r.Concurrency)).Select(g => new CellGroup(g.Key, [.. g], null)).ToList();
        return groups.Select(g => g with
        {
            Fallback = groups.FirstOrDefault(other => !ReferenceEquals(other, g) && other.Key.Binding == g.Key.Binding && other.Key.ServiceTimeMs == g.Key.ServiceTimeMs
                && other.Key.Concurrency == g.Key.Concurrency && other.Cells.Any(c => OneCallPerSession(c.Kind)) && !g.Cells.Any(c => OneCallPerSession(c.Kind))),
        });
    }

    private static string CommandName(string description) => description switch
    {
        var d when d.StartsWith("net.tcp", StringComparison.Ordinal) => WcfBinding.NetTcp,
        var d when d.StartsWith("Basic", StringComparison.Ordinal) => WcfBinding.BasicHttps,
        var d when d.EndsWith("SecureConversation", StringComparison.Ordinal) => WcfBinding.WsHttpSecureConversation,
        _ => WcfBinding.WsHttpUserName,
    };

    // "concurrent (Multiple)" reads "Multiple" under a bar group: the axis has room for a word.
    private static string ShortService(string service) =>
        service.IndexOf('(', StringComparison.Ordinal) is var open and >= 0 ? service[(open + 1)..].TrimEnd(')') : service;

    private static void AddCheck(ReportSection section, string target, CellGroup g, string kind, string baseline, double goal, bool strict)
    {
        if (g.Ratio(kind, baseline) is not { } ratio)
        {
            return;
        }

        var met = strict ? ratio > goal : ratio >= goal;
        section.Targets.Add(new TargetCheck(target, Ratio(ratio), met, met ? null : $"{Percent((goal - ratio) / goal)} below {Num(goal, "0.##")}×"));
    }

    /// <summary>
    /// The kinds measured on one binding, service setting, service time and concurrency, and the same cell under the
    /// setting that measured the one-call-per-session kinds (<c>Fallback</c>) when this one did not.
    /// </summary>
    internal sealed record CellGroup((string Binding, string Service, double ServiceTimeMs, int Concurrency) Key, IReadOnlyList<ProxiesResult> Cells, CellGroup? Fallback)
    {
        public ProxiesResult? Cell(string kind) =>
            Cells.FirstOrDefault(c => c.Kind == kind) ?? (OneCallPerSession(kind) ? Fallback?.Cells.FirstOrDefault(c => c.Kind == kind) : null);

        /// <summary>
        /// The median of the round-by-round ratios when both kinds ran their turns side by side in this cell's rounds;
        /// otherwise (a kind borrowed from the other setting's cell, which ran in other rounds) the ratio of their totals.
        /// </summary>
        public double? Ratio(string kind, string baseline) => Paired(kind, baseline)?.Median ??
            (Cell(kind) is { } a && Cell(baseline) is { CallsPerSecond: > 0 } b ? a.CallsPerSecond / b.CallsPerSecond : null);

        public PairedRatio? Paired(string kind, string baseline) =>
            Cells.FirstOrDefault(c => c.Kind == kind) is { } a && Cells.FirstOrDefault(c => c.Kind == baseline) is { } b
                ? PairedRatio.Of(a.RoundCallsPerSecond, b.RoundCallsPerSecond)
                : null;

        public string RatioText(string kind, string baseline) =>
            Paired(kind, baseline)?.ToString() ?? (Ratio(kind, baseline) is { } ratio ? ReportFormat.Ratio(ratio) : "—");
    }
}
