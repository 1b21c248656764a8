using System.CommandLine;
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
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.Proxies.ProxiesScenario;
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

    /// <summary>
    /// Pooled reuse with a lease per proxy, as the drop-in leased before a lease per operation: each proxy reads
    /// <c>InnerChannel</c> first, which pins one channel to it until Close. Selectable with --kind, not in the suite: it
    /// measures the lease per operation against.
    /// </summary>
    public const string PooledReusePerProxy = "pooled reuse, lease per proxy";

    public static readonly string[] AllKinds = [PerCall, PerCallCached, PooledSingleUse, PooledReuse, PooledReuseExclusive, PooledReuseShared, Singleton];

    public static readonly string[] SelectableKinds = [.. AllKinds, PooledReuseLeastRecentlyUsed, PooledReuseAdaptive, PooledReusePerProxy];

    public const string Concurrent = "concurrent";
    public const string Single = "single";
    public const int MaxRoundSeconds = 600;

    private readonly Option<bool> _suite;

    /// <summary>Initializes a new instance of the <see cref="ProxiesScenario"/> class.</summary>
    public ProxiesScenario()
    {
        AddCallsAndBindings(Options);
        var service = Options.Add(
            new Option<string[]>("--service")
            {
                Description = $"How the service serves one session's calls, for the bindings with sessions (nettcp, wshttp-sct): {Concurrent} (ConcurrencyMode.Multiple), {Single} (one at a time, WCF's defaults: PerSession and ConcurrencyMode.Single), or both (default). Bindings without sessions run once.",
                DefaultValueFactory = _ => ["both"],
                AllowMultipleArgumentsPerToken = true,
            },
            (s, v) => s with { Services = [.. new[] { (Concurrent, ServiceConcurrency.Multiple), (Single, ServiceConcurrency.Single) }.Where(c => v.Contains("both") || v.Contains(c.Item1)).Select(c => c.Item2)] });
        service.AcceptOnlyFromAmong(Concurrent, Single, "both");
        Options.Add(
            PositiveInt("--service-time", "Milliseconds the service spends on each call, waiting as on a database. 0 answers at once.", 0, min: 0, max: TestContract.MaxServiceTimeMilliseconds, unit: "milliseconds"),
            (s, v) => s with { ServiceTime = TimeSpan.FromMilliseconds(v) });
        Options.Add(
            PositiveInt("--leases-per-channel", $"MaxLeasesPerChannel of the '{PooledReuseShared}' and '{PooledReuseAdaptive}' kinds: how many proxies may share one channel.", SharedLeasesPerChannel, max: 64),
            (s, v) => s with { SharedLeasesPerChannel = v });
        Options.Add(Many("--concurrency", "Concurrent callers; one cell per value.", [1, 8, 32], 1, 1024), (s, v) => s with { Concurrency = v });
        Options.Add(
            PositiveInt("--rounds", "Paired rounds each cell's calls are split into: every kind takes a turn each round, in reverse order every other round, and a ratio is the median of the rounds' ratios.", 2, max: 200),
            (s, v) => s with { Rounds = v });
        var roundTime = Options.Add(
            new Option<double?>("--round-time")
            {
                Description = $"Seconds each kind's turn in a round may run at most (0.01 to {MaxRoundSeconds}); a turn also ends after its share of --calls. Short turns in many --rounds pair up best. Default: no limit.",
            },
            (s, v) => s with { MaxRoundTime = v is { } seconds ? TimeSpan.FromSeconds(seconds) : null });
        roundTime.Validators.Add(r =>
        {
            if (r.GetValueOrDefault<double?>() is { } value && !(value is >= 0.01 and <= MaxRoundSeconds))
            {
                r.AddError($"--round-time must be from 0.01 to {MaxRoundSeconds} seconds; got {value.ToString(CultureInfo.InvariantCulture)}.");
            }
        });
        var kind = Options.Add(
            new Option<string[]>("--kind")
            {
                Description = $"Kinds of proxy to run: {string.Join(", ", SelectableKinds.Select(k => $"'{k}'"))}. Default: the suite's kinds (the others measure the other idle order, adaptive sharing up to the shared kind's limit, and a lease per proxy).",
                AllowMultipleArgumentsPerToken = true,
            },
            (s, v) => v.Length > 0 ? s with { Kinds = [.. SelectableKinds.Where(v.Contains)] } : s);
        kind.AcceptOnlyFromAmong(SelectableKinds);
        _suite = Options.Add(new Option<bool>("--suite") { Description = "Run the main job's proxies cells, with its settings (every other option but --quick is ignored), to time or check them alone." });
    }

    public override string Name => "proxies";

    public override string Description =>
        "Per-call, per-call with a cached factory, pooled single-use, pooled reuse (alone and shared) and singleton WCF proxies on WSHttp with a security context (the original's scenario), net.tcp (TLS), BasicHttps and WSHttp with UserName, " +
        "at several concurrencies, the bindings with sessions against a service that serves a session's calls at once and one that serves them one at a time (WCF's defaults): calls/s, latency percentiles, CPU and bytes per call, server handshakes and sessions.";

    /// <summary>
    /// The suite's proxies. First every binding and kind at 1, 8 and 32 callers against a service that answers at once,
    /// the bindings with sessions under both service settings: the cost of the calls themselves. Then the bindings with
    /// sessions again, both settings, with a service time of <see cref="SuiteServiceTime"/>, at 8 and 32 callers: what
    /// WCF's defaults do to callers sharing a session. Paired rounds (<see cref="PairedRatio"/>): twelve a cell with
    /// a turn of at most 0.1 s per kind (per-call kinds 0.05 s) in the first pass, four of 0.3 s in the second.
    /// </summary>
    public override ProxiesSettings SuiteSettings(bool quick) => quick
        ? QuickWarmUp(new() { Calls = 40, Concurrency = [1, 8], Rounds = 1, MorePasses = [ServiceTimePass(quick: true)] })
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

    public override ProxiesSettings ReadSettings(ParseResult parse, bool quick) => parse.GetValue(_suite) ? SuiteSettings(quick) : base.ReadSettings(parse, quick);

    /// <summary>Declares <c>--calls</c> and <c>--binding</c>, which the proxies and original commands share.</summary>
    internal static void AddCallsAndBindings(SettingsBinder<ProxiesSettings> options)
    {
        options.Add(PositiveInt("--calls", "Calls per cell.", 20_000), (s, v) => s with { Calls = v });
        options.Add(Names("--binding", "Bindings to run", WcfBinding.All), (s, v) => s with { Bindings = Chosen(v, WcfBinding.All) });
    }

    /// <summary>A warm-up of seconds is the point of a real run and a waste in a quick one: 40 calls or half a second.</summary>
    internal static ProxiesSettings QuickWarmUp(ProxiesSettings settings) => settings with { WarmUpCalls = 40, WarmUpTime = TimeSpan.FromSeconds(0.5) };

    protected override ProxiesSettings Basis(bool quick) => quick ? QuickWarmUp(new() { Calls = 40, Concurrency = [1, 8], Rounds = 1 }) : new();

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
        var section = NewSection("Proxies: per-call, pooled and singleton WCF proxies", results);
        AddFigures(section, results, settings);
        return section;
    }

    /// <summary>Whether a kind's sessions carry one call each, so how the service serves a session's calls cannot change it.</summary>
    /// <returns>True for per-call proxies (a session each) and single-use pooled channels (closed after their call).</returns>
    public static bool OneCallPerSession(string kind) => kind is PerCall or PerCallCached or PooledSingleUse;

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

    /// <summary>Adds the proxies' tables, target checks and notes to <paramref name="section"/>; the original command adds its own table to the same.</summary>
    internal static void AddFigures(ReportSection section, IReadOnlyList<ProxiesResult> results, ProxiesSettings settings)
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

        section.Notes.Add("Per-call and single-use kinds run under the first service setting only (a session a call); the other setting's rows borrow their figures.");
        section.Notes.Add("CPU and bytes per call are the client process's; handshakes, sessions and negotiations are the test services' counts.");
    }

    /// <summary>
    /// The cells grouped by binding, service setting, service time and concurrency, in the order they ran; a group
    /// whose one-call-per-session kinds ran under another setting borrows them from that setting's group.
    /// </summary>
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

/// <summary>The proxies scenario's settings.</summary>
internal sealed record ProxiesSettings
{
    /// <summary>Gets the calls per cell (the original: 20,000), split evenly over the rounds.</summary>
    public int Calls { get; init; } = 20_000;

    public IReadOnlyList<int> Concurrency { get; init; } = [1, 8, 32];

    public IReadOnlyList<string> Bindings { get; init; } = WcfBinding.All;

    public IReadOnlyList<string> Kinds { get; init; } = ProxiesScenario.AllKinds;

    /// <summary>
    /// Gets the service settings a binding with sessions runs against: a session's calls served at once, and one at a
    /// time as a WCF service with its defaults serves them. A binding without sessions runs once, against the first.
    /// </summary>
    public IReadOnlyList<ServiceConcurrency> Services { get; init; } = [ServiceConcurrency.Multiple, ServiceConcurrency.Single];

    /// <summary>Gets the <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> of the shared pooled kind.</summary>
    public int SharedLeasesPerChannel { get; init; } = ProxiesScenario.SharedLeasesPerChannel;

    /// <summary>Gets how long the service spends on each call (<c>EchoAfter</c>); zero calls <c>Echo</c>, which answers at once.</summary>
    public TimeSpan ServiceTime { get; init; } = TimeSpan.Zero;

    /// <summary>
    /// Gets how many rounds each cell runs: every kind takes one turn a round, in reverse order every other round, so
    /// the kinds' turns pair up round by round (<see cref="PairedRatio"/>); each cell's totals sum its turns.
    /// </summary>
    public int Rounds { get; init; } = 2;

    /// <summary>Gets the longest one round of one cell may run before it stops early; <see langword="null"/> for no limit.</summary>
    public TimeSpan? MaxRoundTime { get; init; }

    /// <summary>
    /// Gets the longest a round of the per-call kinds (plain and cached factory) may run, when shorter than
    /// <see cref="MaxRoundTime"/>. They pay a connection and a handshake a call, 10 to 200 times slower than pooled reuse,
    /// so a shorter round still holds enough calls for the ratios they are the denominator of.
    /// </summary>
    public TimeSpan? PerCallRoundTime { get; init; }

    /// <summary>The longest one round of <paramref name="kind"/> may run: <see cref="PerCallRoundTime"/> for the per-call kinds when it is shorter.</summary>
    public TimeSpan? RoundTimeOf(string kind) =>
        kind is ProxiesScenario.PerCall or ProxiesScenario.PerCallCached && PerCallRoundTime is { } perCall && (MaxRoundTime is not { } max || perCall < max)
            ? perCall
            : MaxRoundTime;

    /// <summary>
    /// Gets the longest each kind's unreported warm-up pass may run, per binding. Long enough for the JIT to finish
    /// tiering the call path up: with 100 calls, the kind that happened to run first paid for it in its first round
    /// (docs/performance.md).
    /// </summary>
    public TimeSpan WarmUpTime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Gets passes to run after this one, each with settings of its own (the suite's second pass has a service time);
    /// their cells join this pass's in one report.
    /// </summary>
    public IReadOnlyList<ProxiesSettings> MorePasses { get; init; } = [];

    /// <summary>Gets this pass and the ones after it, in the order they run.</summary>
    public IEnumerable<ProxiesSettings> Passes => [this, .. MorePasses.SelectMany(p => p.Passes)];

    /// <summary>Gets the most calls each kind's warm-up pass makes, per binding (20,000 was enough for tier-up on net.tcp).</summary>
    public int WarmUpCalls { get; init; } = 20_000;

    /// <summary>Gets the most calls of each kind's unrecorded turn at a cell's concurrency, after its set-up and before the first round.</summary>
    public int CellWarmUpCalls { get; init; } = 5_000;

    /// <summary>Gets the longest each kind's unrecorded turn at a cell's concurrency may run.</summary>
    public TimeSpan CellWarmUpTime { get; init; } = TimeSpan.FromSeconds(0.3);
}

/// <summary>
/// One cell: a kind of proxy, on one binding against one service setting (<c>Service</c>: how the service served a
/// session's calls, <see cref="WcfBinding.ServiceLabel"/>, or <see cref="WcfBinding.NoSession"/>) with a service time
/// (<c>ServiceTimeMs</c>, 0 when the service answers at once), at one concurrency. CPU is the client process's
/// (<c>CpuMicrosPerCall</c>) and the server process's (<c>ServerCpuMicrosPerCall</c>, NaN when unknown).
/// </summary>
internal sealed record ProxiesResult(
    string Binding, string Service, double ServiceTimeMs, string Kind, int Concurrency, int Calls, double Seconds, double CallsPerSecond, LatencySummary Latency, double CpuMicrosPerCall,
    double AllocatedBytesPerCall, ServerCountsSnapshot WarmUp, ServerCountsSnapshot DuringCalls, double ServerCpuMicrosPerCall = double.NaN, IReadOnlyList<double>? RoundCallsPerSecond = null)
{
    /// <summary>Gets the calls per second of each round's turn, in round order; the other kinds of the cell ran their turns beside these.</summary>
    public IReadOnlyList<double> RoundCallsPerSecond { get; init; } = RoundCallsPerSecond ?? [];
}

/// <summary>
/// Per-call, per-call with the WCF factory cache, pooled single-use, pooled reuse and singleton WCF proxies, making
/// the same echo calls on each binding the WCF test services serve, at several concurrencies; a binding with sessions
/// runs against each service setting (a session's calls at once, or one at a time as WCF's defaults serve them). The
/// test services run in the server process and count connections, TLS handshakes and sessions, so each cell shows
/// where its opens happened.
/// </summary>
internal sealed class ProxiesRun(PerfContext context, ProxiesSettings settings)
{
    public async Task<IReadOnlyList<ProxiesResult>> RunAsync(CancellationToken cancellationToken)
    {
        var endpoints = context.Server.Endpoints.Wcf
            ?? throw new InvalidOperationException("The proxies scenario needs the WCF test services; run it against the embedded servers.");
        var results = new List<ProxiesResult>();
        foreach (var name in settings.Bindings)
        {
            // A binding without sessions is served at once under either setting, so it runs once. Each target keeps
            // one address object: WCF's factory cache (the cached-factory kind) cannot compare two equal addresses with
            // a DNS identity (EndpointIdentity.GetHashCode is not supported), only the same one.
            var targets = (WcfBinding.HasSessions(name) ? settings.Services : settings.Services.Take(1))
                .Select(service => new WcfBinding(name, service, endpoints)).ToList();

            // An unreported pass of every kind first, long enough for tier-up, so JIT and start-up costs land on no kind
            // in particular. Once per binding: the client's code path is the same whichever way the service serves it.
            foreach (var kind in settings.Kinds)
            {
                await WarmUpAsync(targets[0], kind, settings.WarmUpCalls, settings.WarmUpTime, cancellationToken);
            }

            foreach (var binding in targets)
            {
                // A session that carries one call is served alike under either setting: those kinds run under the first.
                var kinds = binding == targets[0] ? settings.Kinds : [.. settings.Kinds.Where(k => !OneCallPerSession(k))];
                foreach (var concurrency in settings.Concurrency)
                {
                    results.AddRange(await RunCellsAsync(binding, kinds, concurrency, cancellationToken));
                }
            }
        }

        return results;
    }

    /// <summary>
    /// Runs every kind on one binding, service setting and concurrency in paired rounds: every kind's proxy is set up
    /// and warmed at this concurrency first, then each round gives every kind one turn, in reverse order every other
    /// round (A B, B A, A B, …), so each round's turns ran next to each other under the same load and pair up.
    /// </summary>
    private async Task<IEnumerable<ProxiesResult>> RunCellsAsync(WcfBinding binding, IReadOnlyList<string> kinds, int concurrency, CancellationToken cancellationToken)
    {
        var cells = kinds.ToDictionary(kind => kind, _ => new Cell());
        var proxies = new Dictionary<string, ProxyKind>();
        var label = $"proxies: {binding.Description}, {binding.Service}{ServiceTime()}, concurrency {concurrency}";
        try
        {
            await context.Console.Status().StartAsync(Markup.Escape(label), async status =>
            {
                foreach (var kind in kinds)
                {
                    status.Status(Markup.Escape($"{label}, {kind}: setting up"));
                    var before = await context.Server.GetStatsAsync(cancellationToken);
                    proxies[kind] = await ProxyKind.StartAsync(kind, binding, concurrency, (int)settings.ServiceTime.TotalMilliseconds, settings.SharedLeasesPerChannel, cancellationToken);

                    // An unrecorded turn at this concurrency: the proxy's first calls, the thread pool's growth to this
                    // many callers and the tier-up of what this concurrency runs land outside every round.
                    var calls = Math.Min(CallsPerRound(0), settings.CellWarmUpCalls);
                    await RunCallsAsync(proxies[kind], concurrency, calls, Deadline(Shortest(settings.RoundTimeOf(kind), settings.CellWarmUpTime)), latency: null, cancellationToken);
                    await proxies[kind].QuiesceAsync(cancellationToken);
                    cells[kind].WarmUp = cells[kind].WarmUp.Plus(binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken)) - binding.CountersOf(before));
                }

                // Set-up garbage (a pool's 50 handshakes against a singleton's one) is collected before the first
                // round, on both sides, so no kind pays inside its turns for what it did before them.
                await context.SettleAsync(cancellationToken);

                var previous = string.Empty;
                for (var round = 0; round < settings.Rounds; round++)
                {
                    var order = round % 2 == 0 ? kinds : kinds.Reverse();
                    foreach (var kind in order)
                    {
                        // A turn of a kind with a session a call leaves hundreds of closed connections' garbage and
                        // teardown in both processes, which the kind after it would pay inside its turn (suspected in
                        // the suite of 15:00 UTC, 2026-11-24: pooled reuse, right after single-use, read 0.90x of the
                        // singleton on WSHttp SecureConversation where the exclusive kind, the same settings there,
                        // read 0.99x; one-caller cells stay noisy with it). Both sides settle before the first turn
                        // after such a block.
                        if (OneCallPerSession(previous) && !OneCallPerSession(kind))
                        {
                            await context.SettleAsync(cancellationToken);
                        }

                        previous = kind;
                        status.Status(Markup.Escape($"{label}, {kind} (round {round + 1} of {settings.Rounds})"));
                        await RunTurnAsync(binding, proxies[kind], concurrency, CallsPerRound(round), cells[kind], settings.RoundTimeOf(kind), cancellationToken);
                    }
                }

                status.Status(Markup.Escape($"{label}: closing"));
            });
        }
        finally
        {
            foreach (var proxy in proxies.Values)
            {
                await proxy.DisposeAsync();
            }
        }

        var results = kinds.Select(kind => cells[kind].ToResult(binding.Description, binding.Service, settings.ServiceTime.TotalMilliseconds, kind, concurrency)).ToList();
        context.Console.MarkupLine(Markup.Escape($"  {label}: " + string.Join(", ", results.Select(r => $"{r.Kind} {r.CallsPerSecond:N0}/s"))));
        return results;
    }

    private int CallsPerRound(int round) => (settings.Calls / settings.Rounds) + (round < settings.Calls % settings.Rounds ? 1 : 0);

    private static TimeSpan? Shortest(TimeSpan? a, TimeSpan b) => a is { } limit && limit < b ? limit : b;

    private static long Deadline(TimeSpan? maxTime) => maxTime is { } limit ? Stopwatch.GetTimestamp() + (long)(limit.TotalSeconds * Stopwatch.Frequency) : long.MaxValue;

    /// <summary>One kind's turn in a round, timed; what the pool does after it (a single-use pool's refill) is left out of every turn.</summary>
    private async Task RunTurnAsync(WcfBinding binding, ProxyKind proxies, int concurrency, int calls, Cell cell, TimeSpan? maxTime, CancellationToken cancellationToken)
    {
        var serverBefore = await context.Server.GetStatsAsync(cancellationToken);
        var cpuBefore = Environment.CpuUsage.TotalTime;
        var allocatedBefore = GC.GetTotalAllocatedBytes(precise: true);
        var started = Stopwatch.GetTimestamp();
        var done = await RunCallsAsync(proxies, concurrency, calls, Deadline(maxTime), cell.Latency, cancellationToken);
        var seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
        cell.Seconds += seconds;
        cell.CpuSeconds += (Environment.CpuUsage.TotalTime - cpuBefore).TotalSeconds;
        cell.AllocatedBytes += GC.GetTotalAllocatedBytes(precise: true) - allocatedBefore;
        cell.Calls += done;
        cell.RoundRates.Add(done / seconds);
        var after = await context.Server.GetStatsAsync(cancellationToken);
        cell.ServerCpuSeconds += after.CpuSeconds - serverBefore.CpuSeconds;
        cell.DuringCalls = cell.DuringCalls.Plus(binding.CountersOf(after) - binding.CountersOf(serverBefore));

        if (await proxies.QuiesceAsync(cancellationToken))
        {
            cell.WarmUp = cell.WarmUp.Plus(binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken)) - binding.CountersOf(after));
        }
    }

    /// <returns>The calls made.</returns>
    private static async Task<int> RunCallsAsync(ProxyKind proxies, int concurrency, int calls, long deadline, LatencyRecorder? latency, CancellationToken cancellationToken)
    {
        var done = 0;
        var next = -1;
        var workers = Enumerable.Range(0, concurrency).Select(_ => Task.Run(
            async () =>
            {
                for (var i = Interlocked.Increment(ref next); i < calls && Stopwatch.GetTimestamp() < deadline; i = Interlocked.Increment(ref next))
                {
                    var callStarted = Stopwatch.GetTimestamp();
                    await proxies.CallAsync("ping " + i.ToString(CultureInfo.InvariantCulture), cancellationToken);
                    latency?.RecordSince(callStarted);
                    Interlocked.Increment(ref done);
                }
            },
            cancellationToken));
        await Task.WhenAll(workers);
        return done;
    }

    private async Task WarmUpAsync(WcfBinding binding, string kind, int calls, TimeSpan maxTime, CancellationToken cancellationToken)
    {
        const int Concurrency = 2;
        var label = $"proxies: {binding.Description}, {binding.Service}{ServiceTime()}, {kind} (warm-up)";
        await context.Console.Status().StartAsync(Markup.Escape(label), async status =>
        {
            await using var proxies = await ProxyKind.StartAsync(kind, binding, Concurrency, (int)settings.ServiceTime.TotalMilliseconds, settings.SharedLeasesPerChannel, cancellationToken);
            await RunCallsAsync(proxies, Concurrency, calls, Deadline(maxTime), latency: null, cancellationToken);
            status.Status(Markup.Escape($"{label}: closing"));
        });
    }

    private string ServiceTime() => settings.ServiceTime > TimeSpan.Zero ? $", {settings.ServiceTime.TotalMilliseconds:0} ms a call" : string.Empty;

    /// <summary>One cell's totals over its rounds.</summary>
    private sealed class Cell
    {
        public LatencyRecorder Latency { get; } = new();

        public int Calls { get; set; }

        public double Seconds { get; set; }

        public double CpuSeconds { get; set; }

        /// <summary>Gets or sets the server process's CPU time during the rounds; NaN when unknown.</summary>
        public double ServerCpuSeconds { get; set; }

        public long AllocatedBytes { get; set; }

        public ServerCountsSnapshot WarmUp { get; set; }

        public ServerCountsSnapshot DuringCalls { get; set; }

        /// <summary>Gets the calls per second of each round's turn, in round order, which pair with the other kinds' turns.</summary>
        public List<double> RoundRates { get; } = [];

        public ProxiesResult ToResult(string binding, string service, double serviceTimeMs, string kind, int concurrency) => new(
            binding, service, serviceTimeMs, kind, concurrency, Calls, Seconds, Calls / Seconds, Latency.Summarize(), CpuSeconds * 1e6 / Calls, (double)AllocatedBytes / Calls, WarmUp, DuringCalls, ServerCpuSeconds * 1e6 / Calls, RoundRates);
    }

    /// <summary>How one kind of proxy is set up, called and torn down.</summary>
    private sealed class ProxyKind(Func<string, CancellationToken, Task> call, Func<ValueTask> stop, ServiceChannelPool<IEchoClient>? pool = null) : IAsyncDisposable
    {
        private long _openedWhenQuiet = -1;

        /// <param name="serviceTime">Milliseconds the service spends on each call; 0 calls <c>Echo</c>, which answers at once.</param>
        /// <param name="sharedLeasesPerChannel">The <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> of the shared kind.</param>
        public static async Task<ProxyKind> StartAsync(string kind, WcfBinding binding, int concurrency, int serviceTime, int sharedLeasesPerChannel, CancellationToken cancellationToken)
        {
            Task<string> Call(IEchoClient client, string message) => serviceTime > 0 ? client.EchoAfterAsync(message, serviceTime) : client.EchoAsync(message);

            var wcfBinding = binding.CreateBinding();
            switch (kind)
            {
                case PerCall:
                    return new ProxyKind(
                        async (message, _) =>
                        {
                            var client = new EchoClient(wcfBinding, binding.Address);
                            binding.Configure(client.ClientCredentials);
                            await CallAndCloseAsync(client, Call(client, message));
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

                            await CallAndCloseAsync(client, serviceTime > 0 ? client.EchoAfterAsync(message, serviceTime) : client.EchoAsync(message));
                        },
                        () => ValueTask.CompletedTask);
                }

                case Singleton:
                {
                    var client = new EchoClient(wcfBinding, binding.Address);
                    binding.Configure(client.ClientCredentials);
                    ICommunicationObject communication = client;
                    await Task.Factory.FromAsync(communication.BeginOpen, communication.EndOpen, state: null);
                    return new ProxyKind((message, _) => Call(client, message), () => new ValueTask(CloseAsync(client)));
                }

                default:
                {
                    // Library defaults, as an application that swapped its proxy's base class would run: pooled reuse
                    // and single-use as they are, the other pooled kinds with one setting changed.
                    var options = new ChannelPoolOptions
                    {
                        Name = $"perf-{binding.Name}-{kind.Replace(' ', '-')}-{concurrency}",
                        LeaseMode = kind == PooledSingleUse ? LeaseMode.SingleUse : LeaseMode.Reuse,
                        IdleOrder = kind == PooledReuseLeastRecentlyUsed ? IdleOrder.LeastRecentlyUsed : IdleOrder.MostRecentlyUsed,
                    };
                    switch (kind)
                    {
                        case PooledReuseExclusive:
                            options.MaxLeasesPerChannel = 1;
                            break;
                        case PooledReuseShared:
                            (options.MaxLeasesPerChannel, options.LeaseSharing) = (sharedLeasesPerChannel, LeaseSharing.Always);
                            break;
                        case PooledReuseAdaptive:
                            options.MaxLeasesPerChannel = sharedLeasesPerChannel;
                            break;
                    }

                    var pool = new ServiceChannelPool<IEchoClient>(wcfBinding, binding.Address, options, factory => binding.Configure(factory.Credentials));
                    await pool.WarmUpAsync(pool.PoolSize, cancellationToken);
                    Func<string, CancellationToken, Task> call = async (message, token) =>
                    {
                        var proxy = new PooledEchoClient(pool);
                        try
                        {
                            if (kind == PooledReusePerProxy)
                            {
                                // The lease per proxy measured on purpose: the pool is warm to the load, so the read
                                // finds an idle channel and does not block.
#pragma warning disable CPSM005
                                _ = proxy.InnerChannel;
#pragma warning restore CPSM005
                            }
                            else
                            {
                                await proxy.OpenAsync(token);
                            }

                            await Call(proxy, message);
                        }
                        finally
                        {
                            proxy.Close();
                        }
                    };
                    if (options.LeaseMode == LeaseMode.Reuse)
                    {
                        await GrowToLoadAsync(pool, concurrency, call, cancellationToken);
                    }

                    return new ProxyKind(call, pool.DisposeAsync, pool);
                }
            }
        }

        public Task CallAsync(string message, CancellationToken cancellationToken) => call(message, cancellationToken);

        /// <summary>
        /// Waits until the pool has stopped opening and closing channels (at most 10 s): a single-use pool refills after
        /// its turn, and left running, its handshakes would land in the next kind's turn.
        /// </summary>
        /// <returns>Whether the pool had anything to finish.</returns>
        public async Task<bool> QuiesceAsync(CancellationToken cancellationToken)
        {
            if (pool is null)
            {
                return false;
            }

            // A pool that opened and closed nothing since it was last quiet (a reuse pool at its load) costs no wait.
            var snapshot = pool.GetSnapshot();
            if (snapshot.Opening == 0 && snapshot.Closing == 0 && snapshot.TotalOpened == _openedWhenQuiet)
            {
                return false;
            }

            var giveUp = Stopwatch.GetTimestamp() + (10 * Stopwatch.Frequency);
            var opened = -1L;
            var quietPolls = 0;
            while (quietPolls < 3 && Stopwatch.GetTimestamp() < giveUp)
            {
                snapshot = pool.GetSnapshot();
                quietPolls = snapshot.Opening == 0 && snapshot.Closing == 0 && snapshot.TotalOpened == opened ? quietPolls + 1 : 0;
                opened = snapshot.TotalOpened;
                await Task.Delay(10, cancellationToken);
            }

            _openedWhenQuiet = opened;
            return true;
        }

        /// <summary>
        /// Lets a reuse pool grow to the size its load asks for before the clock starts: with <paramref name="concurrency"/>
        /// channels leased, fewer than the refill threshold may be idle, and the pool opens more in the background, as
        /// an app's pool does once, in its first second at that load. Left in, a cell of a second or two paid those
        /// handshakes (48 in the 2026-11-24 suite's net.tcp cell at 32 callers), which a pool at steady state does not.
        /// </summary>
        private static async Task GrowToLoadAsync(ServiceChannelPool<IEchoClient> pool, int concurrency, Func<string, CancellationToken, Task> call, CancellationToken cancellationToken)
        {
            // The pool opens only while channels are leased, so the load stays on until it has stopped opening.
            using var grown = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            grown.CancelAfter(TimeSpan.FromSeconds(10));
            var callers = Enumerable.Range(0, concurrency).Select(caller => Task.Run(
                async () =>
                {
                    while (!grown.IsCancellationRequested)
                    {
                        await call("grow " + caller.ToString(CultureInfo.InvariantCulture), cancellationToken);
                    }
                },
                cancellationToken)).ToList();
            var opened = -1L;
            var quietSince = Stopwatch.GetTimestamp();
            while (!grown.IsCancellationRequested && !callers.Any(c => c.IsFaulted))
            {
                var snapshot = pool.GetSnapshot();
                if (snapshot.TotalOpened != opened || snapshot.Opening > 0)
                {
                    opened = snapshot.TotalOpened;
                    quietSince = Stopwatch.GetTimestamp();
                }
                else if (Stopwatch.GetElapsedTime(quietSince) > TimeSpan.FromMilliseconds(200))
                {
                    break;
                }

                await Task.Delay(20, CancellationToken.None);
            }

            await grown.CancelAsync();
            await Task.WhenAll(callers);
        }

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
