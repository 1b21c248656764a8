using System.CommandLine;
using ChannelPool.Perf.Reporting;

namespace ChannelPool.Perf.Scenarios;

/// <summary>A scenario as the console drives it, whatever its settings: build its command, run it alone or in the suite.</summary>
internal interface IPerfScenario
{
    /// <summary>Gets the command's name; also the report section's id, and the folder <c>--publish</c> writes its report to.</summary>
    string Name { get; }

    /// <summary>Gets the command's help text.</summary>
    string Description { get; }

    /// <summary>Gets whether the console starts its embedded servers for this scenario (false when the scenario starts its own).</summary>
    bool UsesEmbeddedServers { get; }

    /// <summary>Gets whether the suite (the console with no command) runs this scenario.</summary>
    bool InSuite { get; }

    /// <summary>Adds the scenario's options, with their validators, to <paramref name="command"/>.</summary>
    /// <param name="command">The scenario's own command, or a command that runs several scenarios.</param>
    void AddOptions(Command command);

    /// <summary>Runs the scenario with the settings its options say, and returns its report section.</summary>
    /// <returns>The section, with its tables, targets and results.</returns>
    Task<ReportSection> RunAsync(PerfContext context, ParseResult parse, CancellationToken cancellationToken);

    /// <summary>Runs the scenario as the suite sizes it, and returns its report section.</summary>
    Task<ReportSection> RunInSuiteAsync(PerfContext context, CancellationToken cancellationToken);
}

/// <summary>
/// One measurement of the perf console: a command, its options, a run and a report. A new scenario derives from this
/// with its settings and results types and is listed in <c>PerfCli.Scenarios</c>; its command, <c>--quick</c>, a
/// place in the suite (when <see cref="SuiteSettings"/> gives settings), the console's printout, the report and
/// <c>--publish</c> then come with it.
/// </summary>
/// <typeparam name="TSettings">What one run measures: the sizes, counts and durations its options set.</typeparam>
/// <typeparam name="TResults">What one run measured, written to results.json as it is.</typeparam>
internal abstract class PerfScenario<TSettings, TResults> : IPerfScenario
    where TSettings : class
{
    public abstract string Name { get; }

    public abstract string Description { get; }

    public virtual bool UsesEmbeddedServers => true;

    public bool InSuite => SuiteSettings(quick: false) is not null;

    /// <summary>Gets the scenario's options, each declared once with the setting it sets.</summary>
    protected SettingsBinder<TSettings> Options { get; } = new();

    public virtual void AddOptions(Command command) => Options.AddTo(command);

    /// <summary>Reads the scenario's options into settings: what the command line set, over <see cref="Basis"/>.</summary>
    /// <param name="quick">Whether <c>--quick</c> was given: whatever the command line did not set keeps its quick size.</param>
    public virtual TSettings ReadSettings(ParseResult parse, bool quick) => Options.Read(parse, Basis(quick));

    /// <summary>Gets the settings a command's run starts from before its options apply: the defaults, or the quick sizes.</summary>
    /// <param name="quick">Whether <c>--quick</c> was given.</param>
    protected abstract TSettings Basis(bool quick);

    /// <summary>Gets the settings the suite runs this scenario with, or <see langword="null"/> when the suite leaves it out.</summary>
    /// <param name="quick">Whether the suite runs with <c>--quick</c>.</param>
    public virtual TSettings? SuiteSettings(bool quick) => null;

    /// <summary>Measures. Progress goes to <see cref="PerfContext.Console"/> as it happens; figures come back as results.</summary>
    /// <param name="context">The run's servers, console and clients' HTTP handler.</param>
    public abstract Task<TResults> RunAsync(PerfContext context, TSettings settings, CancellationToken cancellationToken);

    /// <summary>Turns results into the report section: formatted tables, target checks and notes.</summary>
    /// <param name="results">What <see cref="RunAsync(PerfContext, TSettings, CancellationToken)"/> measured.</param>
    /// <param name="context">The run, for how its servers ran.</param>
    /// <returns>The section; start it with <see cref="NewSection"/>.</returns>
    public abstract ReportSection Report(TResults results, TSettings settings, PerfContext context);

    Task<ReportSection> IPerfScenario.RunAsync(PerfContext context, ParseResult parse, CancellationToken cancellationToken) =>
        RunAndReportAsync(context, ReadSettings(parse, context.Quick), cancellationToken);

    Task<ReportSection> IPerfScenario.RunInSuiteAsync(PerfContext context, CancellationToken cancellationToken) =>
        RunAndReportAsync(context, SuiteSettings(context.Quick) ?? throw new InvalidOperationException($"The suite does not run the {Name} scenario."), cancellationToken);

    /// <summary>
    /// Starts this scenario's section, under its <see cref="Name"/>, holding <paramref name="results"/> for results.json.
    /// Its paragraph is the command's help text: the report's header says the command and the servers, and
    /// docs/performance.md explains the figures, so a report carries no prose of its own.
    /// </summary>
    /// <returns>An empty section to add tables, targets and notes to.</returns>
    protected ReportSection NewSection(string title, TResults results) => new(Name, title, Description) { Results = results };

    private async Task<ReportSection> RunAndReportAsync(PerfContext context, TSettings settings, CancellationToken cancellationToken) =>
        Report(await RunAsync(context, settings, cancellationToken), settings, context);
}
