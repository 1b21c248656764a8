using System.CommandLine;
using System.Globalization;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
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
    private readonly Option<string[]> _binding = new("--binding")
    {
        Description = $"Bindings to run: {string.Join(", ", HeadroomSettings.AllBindings)}, or all (default).",
        DefaultValueFactory = _ => ["all"],
        AllowMultipleArgumentsPerToken = true,
    };

    private readonly Option<int> _peak = PositiveInt("--peak", "The most concurrent callers; the ramp doubles from 1 up to it.", 64, max: ChannelPoolOptions.DefaultMaxChannels);
    private readonly Option<double> _lifetime = PositiveDouble("--lifetime", "Seconds of ChannelLifetime for both pools; the adaptive window and half-life follow it.", 10);
    private readonly Option<double> _step = PositiveDouble("--step", "Seconds each step of the ramp lasts.", 2);
    private readonly Option<double> _lowStep = PositiveDouble("--low-step", "Seconds the low step after the peak lasts, its quiet tail included.", 35);
    private readonly Option<double> _quiet = PositiveDouble("--quiet", "Seconds at the end of the low step over which the quiet figures are measured.", 10);
    private readonly Option<double> _jump = PositiveDouble("--jump", "Seconds of the sudden return to the peak after the low step.", 2);
    private readonly Option<int> _rounds = PositiveInt("--rounds", "Times each pool runs the whole load; they take turns, in reverse order every other round.", 2, max: 20);

    /// <summary>Initializes a new instance of the <see cref="HeadroomScenario"/> class.</summary>
    public HeadroomScenario()
    {
        _binding.Validators.Add(r =>
        {
            foreach (var name in r.GetValueOrDefault<string[]>() ?? [])
            {
                if (name != "all" && !HeadroomSettings.AllBindings.Contains(name))
                {
                    r.AddError($"Unknown --binding '{name}'; use {string.Join(", ", HeadroomSettings.AllBindings)} or all.");
                }
            }
        });
        _lifetime.Validators.Add(r =>
        {
            if (r.GetValueOrDefault<double>() is var seconds && (seconds < 1 || seconds > 86_400))
            {
                r.AddError($"--lifetime must be from 1 to 86400 seconds, as ChannelLifetime; got {seconds.ToString(CultureInfo.InvariantCulture)}.");
            }
        });
        _quiet.Validators.Add(r =>
        {
            if (r.GetValue(_quiet) >= r.GetValue(_lowStep))
            {
                r.AddError($"--quiet ({r.GetValue(_quiet).ToString(CultureInfo.InvariantCulture)} s) must be shorter than --low-step ({r.GetValue(_lowStep).ToString(CultureInfo.InvariantCulture)} s): the low step settles first.");
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

    public override void AddOptions(Command command)
    {
        command.Add(_binding);
        command.Add(_peak);
        command.Add(_lifetime);
        command.Add(_step);
        command.Add(_lowStep);
        command.Add(_quiet);
        command.Add(_jump);
        command.Add(_rounds);
    }

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
        var names = parse.GetValue(_binding)!;
        var bindings = names.Contains("all") ? HeadroomSettings.AllBindings : [.. HeadroomSettings.AllBindings.Where(names.Contains)];
        var lowStep = Pick(parse, _lowStep, quick, QuickSettings.LowStepTime.TotalSeconds);
        return new()
        {
            Bindings = bindings,
            Peak = Pick(parse, _peak, quick, QuickSettings.Peak),
            ChannelLifetime = TimeSpan.FromSeconds(Pick(parse, _lifetime, quick, QuickSettings.ChannelLifetime.TotalSeconds)),
            StepTime = TimeSpan.FromSeconds(Pick(parse, _step, quick, QuickSettings.StepTime.TotalSeconds)),
            LowStepTime = TimeSpan.FromSeconds(lowStep),
            QuietTime = TimeSpan.FromSeconds(Math.Min(Pick(parse, _quiet, quick, QuickSettings.QuietTime.TotalSeconds), lowStep / 2)),
            JumpTime = TimeSpan.FromSeconds(Pick(parse, _jump, quick, QuickSettings.JumpTime.TotalSeconds)),
            Rounds = Pick(parse, _rounds, quick, 1),
        };
    }

    public override Task<IReadOnlyList<HeadroomResult>> RunAsync(PerfContext context, HeadroomSettings settings, CancellationToken cancellationToken) =>
        new HeadroomRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(IReadOnlyList<HeadroomResult> results, HeadroomSettings settings, PerfContext context)
    {
        var section = NewSection("Headroom: a fixed idle target against one that follows demand", Describe(settings), results);
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
            var slug = binding.First().Binding.StartsWith("net.tcp", StringComparison.Ordinal) ? WcfBinding.NetTcp : WcfBinding.WsHttpSecureConversation;
            section.Charts.Add(new Chart(
                $"headroom-{slug}-timeline",
                $"{binding.Key}: callers, idle channels and the adaptive target (round 1)",
                ChartKind.Line,
                "Seconds since the load started",
                "Callers / channels",
                [
                    .. binding.First().Timeline.Select(s => new ChartPoint("callers", string.Empty, s.Seconds, s.Callers)),
                    .. binding.SelectMany(r => r.Timeline.Select(s => new ChartPoint($"{r.Pool}: idle", string.Empty, s.Seconds, s.Idle))),
                    .. binding.Where(r => r.Pool == HeadroomRun.Adaptive).SelectMany(r => r.Timeline.Select(s => new ChartPoint("adaptive: idle target", string.Empty, s.Seconds, s.Target))),
                ]));
        }

        section.Charts.Add(new Chart(
            "headroom-low-step",
            "At the low step: handshakes per minute (log scale)",
            ChartKind.GroupedBar,
            "Binding",
            "Handshakes per minute",
            [.. results.Select(r => new ChartPoint(r.Pool, r.Binding, 0, Math.Max(HandshakesPerMinute(r, r.Quiet), 0.1)))],
            LogScaleY: true));

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

        section.Notes.Add(
            $"Time is scaled: both pools run with a ChannelLifetime of {settings.ChannelLifetime.TotalSeconds:0.#} s instead of 90 s, and the adaptive window and half-life follow it " +
            $"({settings.ChannelLifetime.TotalSeconds:0.#} s and {settings.ChannelLifetime.TotalSeconds / 3:0.#} s), so the low step of {settings.LowStepTime.TotalSeconds:0.#} s stands for " +
            $"{settings.LowStepTime.TotalSeconds * 90 / settings.ChannelLifetime.TotalSeconds / 60:0.#} minutes of quiet at the defaults. Handshakes per minute scale with it (an idle channel is reopened once per lifetime); their ratio does not.");
        section.Notes.Add(
            "Handshakes are what opening a channel costs the service: on net.tcp a TLS handshake per channel; on WSHttp a security context negotiation per channel (its HTTPS connections are the factory's, shared).");
        section.Notes.Add(
            "\"Waited for an open\" is the pool's channelpool.channel.awaited_opens: leases that found nothing idle and got a channel straight from its open. The jump returns from the quiet low step " +
            "to the peak at once: a fixed pool meets it with its 50 idle channels, an adaptive one with what quiet demand left it, so it is reported but not judged.");
        return section;
    }

    /// <summary>What the scenario measured and how, for the section's paragraph.</summary>
    private static string Describe(HeadroomSettings settings) =>
        $"Echo calls through pooled WCF proxies (a new `PooledClientBase<T>` per call over a `ServiceChannelPool`, as the proxies scenario's pooled reuse), against the WCF test services on 127.0.0.1. " +
        $"The load: {string.Join(", ", settings.Ramp)} concurrent callers, {settings.StepTime.TotalSeconds:0.#} s each; then 1 caller for {settings.LowStepTime.TotalSeconds:0.#} s " +
        $"(the last {settings.QuietTime.TotalSeconds:0.#} s are the quiet figures); then {settings.Peak} at once for {settings.JumpTime.TotalSeconds:0.#} s. " +
        $"Two pools run it in turn, {settings.Rounds} round(s) each, in reverse order every other round, with library defaults but for the lifetime and its jitter ({settings.LifetimeJitter:0.##}, so that expiries spread over more than an open takes, as 10% of 90 s does): `fixed 50` (the original's PoolSize 50, refill at 25) " +
        "and `adaptive` (`IdleTarget.Mode = Adaptive`: it starts at 50; then it keeps idle the channels of callers recently here and gone, as many again as are in use now for arrivals " +
        "but at most half the room under MaxChannels (126), and the channels used up while one opens; down to a minimum of 2). " +
        "Both are warmed to 50 before the load. An unreported pass at 8 callers on each binding warms the JIT first.";

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
