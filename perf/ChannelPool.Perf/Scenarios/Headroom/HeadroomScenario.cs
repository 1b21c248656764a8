using System.CommandLine;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Globalization;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Servers;
using ChannelPool.Perf.Stats;
using ChannelPool.ServiceModel;
using ChannelPool.Testing.ServiceModel;
using Spectre.Console;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Headroom;

/// <summary>
/// The <c>headroom</c> command: does pre-opened headroom that follows demand (an adaptive idle target) keep opens off
/// the callers' path as the original's fixed 50 does, at a fraction of its cost in quiet hours? A load steps from one
/// caller up to 64, down to one and back at once, on net.tcp with TLS and on WSHttp with a security context, through a
/// fixed pool and an adaptive one in turn. Targets, for adaptive: no lease waits for an open after the ramp's first
/// step; at the low step at most 25% of fixed's idle channels and handshakes per minute; at the peak the same
/// throughput.
/// </summary>
internal sealed class HeadroomScenario : PerfScenario<HeadroomSettings, IReadOnlyList<HeadroomResult>>
{
    public HeadroomScenario()
    {
        Options.Add(Names("--binding", "Bindings to run", HeadroomSettings.AllBindings), (s, v) => s with { Bindings = Chosen(v, HeadroomSettings.AllBindings) });
        var lifetime = Options.Add(
            PositiveDouble("--lifetime", "Seconds of ChannelLifetime for both pools; the adaptive window and half-life follow it.", 10), (s, v) => s with { ChannelLifetime = TimeSpan.FromSeconds(v) });
        Options.Add(PositiveDouble("--step", "Seconds each step of the ramp lasts.", 2), (s, v) => s with { StepTime = TimeSpan.FromSeconds(v) });
        var lowStep = Options.Add(
            PositiveDouble("--low-step", "Seconds the low step after the peak lasts, its quiet tail included.", 35), (s, v) => s with { LowStepTime = TimeSpan.FromSeconds(v) });
        var quiet = Options.Add(
            PositiveDouble("--quiet", "Seconds at the end of the low step over which the quiet figures are measured.", 10), (s, v) => s with { QuietTime = TimeSpan.FromSeconds(v) });
        Options.Add(PositiveDouble("--jump", "Seconds of the sudden return to the peak after the low step.", 2), (s, v) => s with { JumpTime = TimeSpan.FromSeconds(v) });
        Options.Add(PositiveInt("--rounds", "Times each pool runs the whole load; they take turns, in reverse order every other round.", 2, max: 20), (s, v) => s with { Rounds = v });
        lifetime.Validators.Add(r =>
        {
            if (r.GetValueOrDefault<double>() is var seconds && (seconds < 1 || seconds > 86_400))
            {
                r.AddError($"--lifetime must be from 1 to 86400 seconds, as ChannelLifetime; got {seconds.ToString(CultureInfo.InvariantCulture)}.");
            }
        });
        quiet.Validators.Add(r =>
        {
            if (r.GetValue(quiet) >= r.GetValue(lowStep))
            {
                r.AddError($"--quiet ({r.GetValue(quiet).ToString(CultureInfo.InvariantCulture)} s) must be shorter than --low-step ({r.GetValue(lowStep).ToString(CultureInfo.InvariantCulture)} s): the low step settles first.");
            }
        });
    }

    public override string Name => "headroom";

    public override string Description =>
        "Pre-opened headroom that follows demand: a load stepping from 1 caller to 64, down to 1 and back, on net.tcp (TLS) and WSHttp with a security context, through a pool with " +
        "the original's fixed 50 idle channels and an adaptive one in turn: leases that waited for an open, lease wait, idle channels and handshakes at the low step, throughput at the peak.";

    /// <summary>Gets the quick run's sizes: up to 8 callers, seconds in all.</summary>
    private static HeadroomSettings QuickSettings { get; } = new()
    {
        Peak = 8, ChannelLifetime = TimeSpan.FromSeconds(2), StepTime = TimeSpan.FromSeconds(0.3), LowStepTime = TimeSpan.FromSeconds(3),
        QuietTime = TimeSpan.FromSeconds(1), JumpTime = TimeSpan.FromSeconds(0.3), Rounds = 1,
    };

    /// <summary>
    /// The suite's headroom: both bindings, one round each (the pools' order flips between the bindings), a 3 s
    /// lifetime, 1 s steps and a 12 s low step (a window and four half-lives to settle, then 5 s of quiet figures):
    /// about 90 s.
    /// </summary>
    public override HeadroomSettings SuiteSettings(bool quick) => quick
        ? QuickSettings
        : new()
        {
            ChannelLifetime = TimeSpan.FromSeconds(3), StepTime = TimeSpan.FromSeconds(1), LowStepTime = TimeSpan.FromSeconds(12),
            QuietTime = TimeSpan.FromSeconds(5), JumpTime = TimeSpan.FromSeconds(1), Rounds = 1,
        };

    public override HeadroomSettings ReadSettings(ParseResult parse, bool quick)
    {
        var settings = base.ReadSettings(parse, quick);
        return settings with { QuietTime = TimeSpan.FromTicks(Math.Min(settings.QuietTime.Ticks, settings.LowStepTime.Ticks / 2)) };
    }

    protected override HeadroomSettings Basis(bool quick) => quick ? QuickSettings : new();

    public override Task<IReadOnlyList<HeadroomResult>> RunAsync(PerfContext context, HeadroomSettings settings, CancellationToken cancellationToken) =>
        new HeadroomRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(IReadOnlyList<HeadroomResult> results, HeadroomSettings settings, PerfContext context)
    {
        var section = NewSection("Headroom: a fixed idle target against one that follows demand", results);
        var byBinding = results.GroupBy(r => r.Binding).ToList();
        section.Tables.Add(new ReportTable(
            "Opens on the callers' path, lease wait, the low step and the peak",
            ["Binding", "Pool", "Waited for an open: first step", "after it", "on the jump", "p99 lease wait ms (ramp and low step)", "Low step: idle held", "Low step: handshakes/min", "Peak: calls/s"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                r.Binding, r.Pool, Num(r.FirstStep.AwaitedOpens), Num(r.AfterFirstStep.Sum(p => p.AwaitedOpens)), Num(r.Jump.AwaitedOpens), Num(r.LeaseWait.P99Ms, "0.000"),
                Num(r.Quiet.MeanIdle, "0.0"), Num(HandshakesPerMinute(r, r.Quiet)), Num(r.PeakStep.CallsPerSecond)])]));

        section.Tables.Add(new ReportTable(
            "Each step",
            ["Binding", "Pool", "Step", "Callers", "Seconds", "Calls/s", "Waited for an open", "p50 wait ms", "p99 wait ms", "Idle (mean)", "Open (mean)", "Target (mean)", "TLS handshakes", "Negotiations"],
            [.. results.SelectMany(r => r.Phases.Select(p => (IReadOnlyList<string>)[
                r.Binding, r.Pool, p.Name, Num(p.Callers), Num(p.Seconds, "0.0"), Num(p.CallsPerSecond), Num(p.AwaitedOpens), Num(p.LeaseWait.P50Ms, "0.000"), Num(p.LeaseWait.P99Ms, "0.000"),
                Num(p.MeanIdle, "0.0"), Num(p.MeanOpen, "0.0"), Num(p.MeanTarget, "0.0"), Num(p.Server.TlsHandshakes), Num(p.Server.Negotiations)]))]));

        foreach (var binding in byBinding)
        {
            var (fix, adaptive) = (binding.Single(r => r.Pool == HeadroomRun.Fixed), binding.Single(r => r.Pool == HeadroomRun.Adaptive));
            var waited = adaptive.AfterFirstStep.Sum(p => p.AwaitedOpens);
            section.Targets.Add(new TargetCheck(
                $"Adaptive: no lease waits for an open after the ramp's first step ({binding.Key})",
                $"{Num(waited)} (fixed 50: {Num(fix.AfterFirstStep.Sum(p => p.AwaitedOpens))})",
                waited == 0,
                waited == 0 ? null : $"{Num(waited)} lease(s) waited"));
            AddAtMost(section, $"Adaptive: idle channels held at the low step ≤ 25% of fixed ({binding.Key})", adaptive.Quiet.MeanIdle, fix.Quiet.MeanIdle, "0.0");
            AddAtMost(section, $"Adaptive: handshakes per minute at the low step ≤ 25% of fixed ({binding.Key})", HandshakesPerMinute(adaptive, adaptive.Quiet), HandshakesPerMinute(fix, fix.Quiet), "N0");
            var peak = fix.PeakStep.CallsPerSecond > 0 ? adaptive.PeakStep.CallsPerSecond / fix.PeakStep.CallsPerSecond : double.NaN;
            section.Targets.Add(new TargetCheck(
                $"Adaptive: throughput at the peak ≥ fixed, within a short step's noise of 5% ({binding.Key})",
                $"{Ratio(peak)} ({Num(adaptive.PeakStep.CallsPerSecond)} against {Num(fix.PeakStep.CallsPerSecond)} calls/s)",
                double.IsNaN(peak) ? null : peak >= 0.95,
                peak >= 0.95 ? null : $"{Percent(1 - peak)} below fixed"));
        }

        section.Notes.Add($"Time is scaled: a ChannelLifetime of {settings.ChannelLifetime.TotalSeconds:0.#} s stands for 90 s, so handshakes per minute scale with it; their ratio does not.");
        return section;
    }

    private static double HandshakesPerMinute(HeadroomResult result, HeadroomPhase phase) =>
        HeadroomRun.HandshakesPerMinute(result.Binding.StartsWith("net.tcp", StringComparison.Ordinal), phase);

    private static void AddAtMost(ReportSection section, string target, double adaptive, double fixedPool, string format)
    {
        var figures = $"{Num(adaptive, format)} against {Num(fixedPool, format)}";
        if (!(fixedPool > 0))
        {
            section.Targets.Add(new TargetCheck(target, $"{figures}: nothing to compare with", null));
            return;
        }

        var share = adaptive / fixedPool;
        section.Targets.Add(new TargetCheck(target, $"{Percent(share)} ({figures})", share <= 0.25, share <= 0.25 ? null : $"{Percent(share - 0.25)} above 25%"));
    }
}

/// <summary>The headroom scenario's settings: the load's steps, how long each lasts, and the lifetime both pools run with.</summary>
internal sealed record HeadroomSettings
{
    /// <summary>The bindings the scenario runs: net.tcp with TLS, and WSHttp with a security context (the original's).</summary>
    public static readonly string[] AllBindings = [WcfBinding.NetTcp, WcfBinding.WsHttpSecureConversation];

    public IReadOnlyList<string> Bindings { get; init; } = AllBindings;

    /// <summary>Gets the most concurrent callers: the ramp doubles from 1 up to it, then drops to 1, then jumps back.</summary>
    public int Peak { get; init; } = 64;

    /// <summary>
    /// Gets the channel lifetime of both pools. It scales the run's time: the adaptive window and half-life follow it
    /// by default, and idle channels are reopened once per lifetime, so a short lifetime shows in seconds what 90 s
    /// shows in minutes.
    /// </summary>
    public TimeSpan ChannelLifetime { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Gets the lifetime jitter of both pools: the most the options allow, rather than the default 0.1, because the
    /// shortened lifetime does not shorten an open. At 90 s the default spreads the expiry of channels opened together
    /// over 9 s, far longer than their reopening takes; at a few seconds only the widest spread keeps that true.
    /// </summary>
    public double LifetimeJitter { get; init; } = 0.5;

    /// <summary>Gets how long each step of the ramp lasts.</summary>
    public TimeSpan StepTime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Gets how long the low step after the peak lasts, its quiet tail included. Before the tail the adaptive target
    /// holds the peak for a window (the lifetime) and then needs about four half-lives to come down.
    /// </summary>
    public TimeSpan LowStepTime { get; init; } = TimeSpan.FromSeconds(35);

    /// <summary>Gets the low step's tail over which the quiet figures (idle held, handshakes per minute) are measured.</summary>
    public TimeSpan QuietTime { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>Gets how long the sudden return to the peak after the low step lasts.</summary>
    public TimeSpan JumpTime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>Gets how many times each pool runs the whole load; the pools take turns, in reverse order every other round.</summary>
    public int Rounds { get; init; } = 2;

    /// <summary>Gets the ramp's steps: 1, 2, 4 … up to <see cref="Peak"/>.</summary>
    public IReadOnlyList<int> Ramp
    {
        get
        {
            List<int> steps = [];
            for (var callers = 1; callers < Peak; callers *= 2)
            {
                steps.Add(callers);
            }

            steps.Add(Peak);
            return steps;
        }
    }
}

/// <summary>One pool's run on one binding, summed over the rounds.</summary>
/// <param name="Binding">The binding's description.</param>
/// <param name="Pool">The pool: <c>fixed 50</c> or <c>adaptive</c>.</param>
/// <param name="Phases">Each step of the load, in order.</param>
/// <param name="LeaseWait">The time callers waited for a channel over the ramp and the low step (the jump has its own, in its phase).</param>
internal sealed record HeadroomResult(string Binding, string Pool, IReadOnlyList<HeadroomPhase> Phases, LatencySummary LeaseWait)
{
    /// <summary>Gets the ramp's first step.</summary>
    public HeadroomPhase FirstStep => Phases[0];

    /// <summary>Gets the phases after the ramp's first step up to the jump: the rest of the ramp and the low step.</summary>
    public IEnumerable<HeadroomPhase> AfterFirstStep => Phases.Skip(1).Where(p => p.Kind != HeadroomPhaseKind.Jump);

    /// <summary>Gets the top of the ramp.</summary>
    public HeadroomPhase PeakStep => Phases.Last(p => p.Kind == HeadroomPhaseKind.Ramp);

    /// <summary>Gets the low step's quiet tail.</summary>
    public HeadroomPhase Quiet => Phases.Single(p => p.Kind == HeadroomPhaseKind.Quiet);

    /// <summary>Gets the sudden return to the peak.</summary>
    public HeadroomPhase Jump => Phases.Single(p => p.Kind == HeadroomPhaseKind.Jump);
}

/// <summary>What a step of the load is.</summary>
internal enum HeadroomPhaseKind
{
    /// <summary>A step of the ramp from 1 caller to the peak.</summary>
    Ramp,

    /// <summary>The low step's first part, while the adaptive target comes down.</summary>
    Settling,

    /// <summary>The low step's tail: quiet hours.</summary>
    Quiet,

    /// <summary>Back to the peak at once.</summary>
    Jump,
}

/// <summary>One step of the load, summed over the rounds.</summary>
/// <param name="Name">What the report calls it, for example <c>ramp 8</c>.</param>
/// <param name="Kind">Ramp, the low step's two parts, or the jump.</param>
/// <param name="Callers">Concurrent callers.</param>
/// <param name="Seconds">How long it ran, over all rounds.</param>
/// <param name="Calls">Calls completed.</param>
/// <param name="AwaitedOpens">Leases that waited for an open (the pool's <c>channelpool.channel.awaited_opens</c>).</param>
/// <param name="LeaseWait">The time callers waited for a channel (the pool's <c>channelpool.channel.wait_time</c>).</param>
/// <param name="MeanIdle">Idle channels, averaged over the step's samples.</param>
/// <param name="MeanOpen">Open channels (idle, leased and opening), averaged over the step's samples.</param>
/// <param name="MeanTarget">The idle target, averaged over the step's samples.</param>
/// <param name="Server">What the test services counted during the step: TLS handshakes, security context negotiations.</param>
internal sealed record HeadroomPhase(
    string Name, HeadroomPhaseKind Kind, int Callers, double Seconds, long Calls, long AwaitedOpens, LatencySummary LeaseWait, double MeanIdle, double MeanOpen, double MeanTarget, ServerCountsSnapshot Server)
{
    public double CallsPerSecond => Seconds > 0 ? Calls / Seconds : 0;
}


/// <summary>
/// Runs the load that steps from one caller up to the peak, down to one and back, through pooled WCF proxies on real
/// bindings: once over a pool with the original's fixed 50 idle channels and once over an adaptive one, taking turns.
/// The pool's own instruments say which leases waited for an open and how long callers waited; the test services
/// count the handshakes; a sampler keeps the pool's counts every 100 ms.
/// </summary>
internal sealed class HeadroomRun(PerfContext context, HeadroomSettings settings)
{
    public const string Fixed = "fixed 50";
    public const string Adaptive = "adaptive";

    /// <summary>The two pools, the fixed one first in the report.</summary>
    public static readonly string[] Pools = [Fixed, Adaptive];

    private static readonly TimeSpan SampleEvery = TimeSpan.FromMilliseconds(100);

    public async Task<IReadOnlyList<HeadroomResult>> RunAsync(CancellationToken cancellationToken)
    {
        var endpoints = context.Server.Endpoints.Wcf
            ?? throw new InvalidOperationException("The headroom scenario needs the WCF test services; run it against the embedded servers.");
        var plan = Plan();
        var results = new List<HeadroomResult>();
        var turn = 0;
        foreach (var name in settings.Bindings)
        {
            // One lease per channel, so how the service serves one session's calls does not matter here; WCF's default it is.
            var binding = new WcfBinding(name, ServiceConcurrency.Single, endpoints);
            await WarmUpAsync(binding, cancellationToken);
            var tallies = Pools.ToDictionary(pool => pool, _ => new Tally(plan));
            for (var round = 0; round < settings.Rounds; round++)
            {
                foreach (var pool in turn++ % 2 == 0 ? Pools : Pools.Reverse())
                {
                    await RunOnceAsync(binding, pool, plan, tallies[pool], round, cancellationToken);
                }
            }

            foreach (var pool in Pools)
            {
                var result = tallies[pool].ToResult(binding.Description, pool);
                results.Add(result);
                context.Console.MarkupLine(Markup.Escape(
                    $"  {binding.Description}, {pool}: {result.AfterFirstStep.Sum(p => p.AwaitedOpens):N0} lease(s) waited for an open after the first step, " +
                    $"{result.Jump.AwaitedOpens:N0} on the jump; at the low step {result.Quiet.MeanIdle:0.#} idle, " +
                    $"{HandshakesPerMinute(binding.Name == WcfBinding.NetTcp, result.Quiet):N0} handshakes/min; at the peak {result.PeakStep.CallsPerSecond:N0} calls/s"));
            }
        }

        return results;
    }

    /// <summary>The handshakes that opening channels cost, per minute of <paramref name="phase"/>: TLS on net.tcp, security context negotiations otherwise.</summary>
    /// <remarks>On net.tcp every channel is a TLS connection; on WSHttp channels share the factory's HTTPS connections, and each negotiates a security context.</remarks>
    public static double HandshakesPerMinute(bool netTcp, HeadroomPhase phase) =>
        phase.Seconds > 0 ? (netTcp ? phase.Server.TlsHandshakes : phase.Server.Negotiations) * 60 / phase.Seconds : 0;

    private List<(string Name, HeadroomPhaseKind Kind, int Callers, TimeSpan Duration)> Plan() =>
    [
        .. settings.Ramp.Select(callers => ($"ramp {callers}", HeadroomPhaseKind.Ramp, callers, settings.StepTime)),
        ("low step, settling", HeadroomPhaseKind.Settling, 1, settings.LowStepTime - settings.QuietTime),
        ("low step, quiet", HeadroomPhaseKind.Quiet, 1, settings.QuietTime),
        ($"jump to {settings.Peak}", HeadroomPhaseKind.Jump, settings.Peak, settings.JumpTime),
    ];

    private ChannelPoolOptions Options(WcfBinding binding, string pool, string run) => new()
    {
        Name = $"headroom-{binding.Name}-{pool.Replace(' ', '-')}-{run}",
        ChannelLifetime = settings.ChannelLifetime,
        LifetimeJitter = settings.LifetimeJitter,
        IdleTarget = { Mode = pool == Adaptive ? IdleTargetMode.Adaptive : IdleTargetMode.Fixed },
    };

    /// <summary>An unreported pass at a few callers, so the JIT has tiered the call path up before either pool is measured.</summary>
    private async Task WarmUpAsync(WcfBinding binding, CancellationToken cancellationToken)
    {
        await context.Console.Status().StartAsync(Markup.Escape($"headroom: {binding.Description}, warm-up"), async _ =>
        {
            await using var pool = new ServiceChannelPool<IEchoClient>(
                binding.CreateBinding(), binding.Address, Options(binding, Fixed, "warm-up"), factory => binding.Configure(factory.Credentials));
            await pool.WarmUpAsync(pool.PoolSize, cancellationToken);
            var load = new CallerLoad(pool, cancellationToken);
            await load.SetCallersAsync(8);
            await Task.Delay(settings.StepTime, cancellationToken);
            await load.SetCallersAsync(0);
        });
    }

    private async Task RunOnceAsync(
        WcfBinding binding,
        string poolKind,
        List<(string Name, HeadroomPhaseKind Kind, int Callers, TimeSpan Duration)> plan,
        Tally tally,
        int round,
        CancellationToken cancellationToken)
    {
        var label = $"headroom: {binding.Description}, {poolKind} (round {round + 1} of {settings.Rounds})";
        await context.Console.Status().StartAsync(Markup.Escape(label), async status =>
        {
            var options = Options(binding, poolKind, $"round{round + 1}");
            await using var pool = new ServiceChannelPool<IEchoClient>(binding.CreateBinding(), binding.Address, options, factory => binding.Configure(factory.Credentials));
            using var instruments = new PoolInstruments(options.Name!, tally);
            await pool.WarmUpAsync(pool.PoolSize, cancellationToken);
            await context.SettleAsync(cancellationToken);

            var load = new CallerLoad(pool, cancellationToken);
            using var stopSampling = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            var sampling = SampleAsync(pool, tally, stopSampling.Token);
            for (var i = 0; i < plan.Count; i++)
            {
                var phase = plan[i];
                status.Status(Markup.Escape($"{label}: {phase.Name}"));
                var before = binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken));
                tally.Current = i;
                await load.SetCallersAsync(phase.Callers);
                var calls = load.Calls;
                var phaseStarted = Stopwatch.GetTimestamp();
                await Task.Delay(phase.Duration, cancellationToken);
                var seconds = Stopwatch.GetElapsedTime(phaseStarted).TotalSeconds;
                var after = binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken));
                tally.Phases[i].Add(seconds, load.Calls - calls, after - before);
            }

            await stopSampling.CancelAsync();
            await sampling;
            tally.Current = -1;
            status.Status(Markup.Escape($"{label}: closing"));
            await load.SetCallersAsync(0);
        });
    }

    private static async Task SampleAsync(ServiceChannelPool<IEchoClient> pool, Tally tally, CancellationToken cancellationToken)
    {
        using var timer = new PeriodicTimer(SampleEvery);
        try
        {
            while (await timer.WaitForNextTickAsync(cancellationToken))
            {
                var s = pool.GetSnapshot();
                if (tally.Current is var i and >= 0)
                {
                    tally.Phases[i].Sample(s.Idle, s.Idle + s.Leased + s.Opening, s.IdleTarget);
                }
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The run is over.
        }
    }

    /// <summary>Callers making pooled echo calls, each a new proxy over the pool, as an application's requests would.</summary>
    private sealed class CallerLoad(ServiceChannelPool<IEchoClient> pool, CancellationToken cancellationToken)
    {
        private readonly List<(Task Calling, CancellationTokenSource Stop)> _callers = [];
        private long _calls;
        private int _count;

        public long Calls => Interlocked.Read(ref _calls);

        public int Callers => Volatile.Read(ref _count);

        /// <summary>Starts callers, or stops the excess after their call in flight.</summary>
        public async Task SetCallersAsync(int count)
        {
            while (_callers.Count < count)
            {
                var stop = new CancellationTokenSource();
                _callers.Add((Task.Run(() => CallUntilAsync(stop.Token), CancellationToken.None), stop));
            }

            if (_callers.Count > count)
            {
                var leaving = _callers[count..];
                _callers.RemoveRange(count, leaving.Count);
                leaving.ForEach(caller => caller.Stop.Cancel());
                try
                {
                    await Task.WhenAll(leaving.Select(caller => caller.Calling));
                }
                finally
                {
                    leaving.ForEach(caller => caller.Stop.Dispose());
                }
            }

            Volatile.Write(ref _count, count);
        }

        private async Task CallUntilAsync(CancellationToken stop)
        {
            while (!stop.IsCancellationRequested)
            {
                var proxy = new PooledEchoClient(pool);
                try
                {
                    await proxy.OpenAsync(cancellationToken);
                    await proxy.EchoAsync("ping");
                }
                finally
                {
                    proxy.Close();
                }

                Interlocked.Increment(ref _calls);
            }
        }
    }

    /// <summary>Listens to one pool's lease waits and awaited opens, and books them to the step under way.</summary>
    private sealed class PoolInstruments : IDisposable
    {
        private const string WaitTime = "channelpool.channel.wait_time";
        private const string AwaitedOpens = "channelpool.channel.awaited_opens";

        private readonly MeterListener _listener = new();
        private readonly string _poolName;
        private readonly Tally _tally;

        public PoolInstruments(string poolName, Tally tally)
        {
            _poolName = poolName;
            _tally = tally;
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == ChannelPoolTelemetry.MeterName && instrument.Name is WaitTime or AwaitedOpens)
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<double>((_, seconds, tags, _) =>
            {
                if (Phase(tags) is { } phase)
                {
                    var ticks = (long)(seconds * Stopwatch.Frequency);
                    phase.LeaseWait.Record(ticks);
                    if (phase.Kind != HeadroomPhaseKind.Jump)
                    {
                        _tally.LeaseWait.Record(ticks);
                    }
                }
            });
            _listener.SetMeasurementEventCallback<long>((_, leases, tags, _) => Phase(tags)?.AddAwaitedOpens(leases));
            _listener.Start();
        }

        public void Dispose() => _listener.Dispose();

        private PhaseTally? Phase(ReadOnlySpan<KeyValuePair<string, object?>> tags)
        {
            foreach (var tag in tags)
            {
                if (tag.Key == ChannelPoolTelemetry.PoolNameTag)
                {
                    return Equals(tag.Value, _poolName) && _tally.Current is var i and >= 0 ? _tally.Phases[i] : null;
                }
            }

            return null;
        }
    }

    /// <summary>One pool's figures on one binding, summed over the rounds.</summary>
    private sealed class Tally(List<(string Name, HeadroomPhaseKind Kind, int Callers, TimeSpan Duration)> plan)
    {
        private volatile int _current = -1;

        public PhaseTally[] Phases { get; } = [.. plan.Select(p => new PhaseTally(p.Name, p.Kind, p.Callers))];

        /// <summary>Gets the lease waits of the ramp and the low step.</summary>
        public LatencyRecorder LeaseWait { get; } = new();

        /// <summary>Gets or sets the step under way, or -1 between runs.</summary>
        public int Current
        {
            get => _current;
            set => _current = value;
        }

        public HeadroomResult ToResult(string binding, string pool) => new(binding, pool, [.. Phases.Select(p => p.ToPhase())], LeaseWait.Summarize());
    }

    private sealed class PhaseTally(string name, HeadroomPhaseKind kind, int callers)
    {
        private readonly Lock _lock = new();
        private double _seconds;
        private long _calls;
        private long _awaitedOpens;
        private double _idle;
        private double _open;
        private double _target;
        private int _samples;
        private ServerCountsSnapshot _server;

        public HeadroomPhaseKind Kind => kind;

        public LatencyRecorder LeaseWait { get; } = new();

        public void AddAwaitedOpens(long leases) => Interlocked.Add(ref _awaitedOpens, leases);

        public void Sample(int idle, int open, int target)
        {
            lock (_lock)
            {
                _idle += idle;
                _open += open;
                _target += target;
                _samples++;
            }
        }

        public void Add(double seconds, long calls, ServerCountsSnapshot server)
        {
            lock (_lock)
            {
                _seconds += seconds;
                _calls += calls;
                _server = _server.Plus(server);
            }
        }

        public HeadroomPhase ToPhase()
        {
            lock (_lock)
            {
                var samples = Math.Max(_samples, 1);
                return new HeadroomPhase(
                    name, kind, callers, _seconds, _calls, Interlocked.Read(ref _awaitedOpens), LeaseWait.Summarize(), _idle / samples, _open / samples, _target / samples, _server);
            }
        }
    }
}
