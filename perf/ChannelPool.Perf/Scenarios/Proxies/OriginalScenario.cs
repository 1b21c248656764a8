using System.CommandLine;
using System.Globalization;
using ChannelPool.Perf.Reporting;
using ChannelPool.Testing.ServiceModel;
using static ChannelPool.Perf.Scenarios.Proxies.ProxiesScenario;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Proxies;

/// <summary>
/// The <c>original</c> command: the 2007 pool's own run, redone. 20,000 calls by one caller through per-call, pooled
/// single-use and singleton WCF proxies, timed beside its 6:31, 4:48 and 1:05. It runs the proxies scenario with those
/// three kinds, and puts the times first.
/// </summary>
internal sealed class OriginalScenario : PerfScenario<ProxiesSettings, IReadOnlyList<ProxiesResult>>
{
    private static readonly (string Kind, string Minutes)[] OriginalTimes = [(PerCall, "6:31"), (PooledSingleUse, "4:48"), (Singleton, "1:05")];

    public OriginalScenario() => AddCallsAndBindings(Options);

    public override string Name => "original";

    public override string Description => "The original 2007 pool's run, redone: 20,000 calls by one caller through per-call, pooled single-use and singleton WCF proxies, timed beside its 6:31, 4:48 and 1:05.";

    protected override ProxiesSettings Basis(bool quick)
    {
        var settings = new ProxiesSettings
        {
            Concurrency = [1],
            Kinds = [.. OriginalTimes.Select(o => o.Kind)],
            Rounds = 1,

            // The 2007 service ran with WCF's defaults; with one caller, one call at a time is all there is either way.
            Services = [ServiceConcurrency.Single],
        };
        return quick ? QuickWarmUp(settings with { Calls = 40 }) : settings;
    }

    public override Task<IReadOnlyList<ProxiesResult>> RunAsync(PerfContext context, ProxiesSettings settings, CancellationToken cancellationToken) =>
        new ProxiesRun(context, settings).RunAsync(cancellationToken);

    public override ReportSection Report(IReadOnlyList<ProxiesResult> results, ProxiesSettings settings, PerfContext context)
    {
        var section = NewSection("The original's run: per-call, pooled single-use and singleton WCF proxies, one caller", results);
        section.Tables.Add(new ReportTable(
            $"The original's run: {settings.Calls:N0} calls, one caller (minutes:seconds)",
            ["Binding", .. OriginalTimes.Select(o => o.Kind)],
            [
                ["2007 pool, wsHttpBinding (the original's figures)", .. OriginalTimes.Select(o => o.Minutes)],
                .. Groups(results).Where(g => g.Key.Concurrency == 1).Select(g => (IReadOnlyList<string>)[
                    g.Key.Binding, .. OriginalTimes.Select(o => g.Cell(o.Kind) is { } r ? Minutes(r.Seconds) : "—")]),
            ]));
        AddFigures(section, results, settings);
        return section;
    }

    private static string Minutes(double seconds) => TimeSpan.FromSeconds(seconds).ToString(seconds >= 3600 ? @"h\:mm\:ss" : @"m\:ss\.f", CultureInfo.InvariantCulture);
}
