using System.CommandLine;

namespace ChannelPool.Perf.Cli;

/// <summary>Options every command takes: how big the run is, and where its reports go.</summary>
internal sealed class CommonOptions
{
    /// <summary>Initializes a new instance of the <see cref="CommonOptions"/> class.</summary>
    public CommonOptions()
    {
        // A quick run checks that the console works; its figures would overwrite the measured ones docs/perf keeps.
        Publish.Validators.Add(r =>
        {
            if (r.GetValue(Quick))
            {
                r.AddError("--publish replaces the reports kept in the repository, and a --quick run's figures are not measurements: drop --quick or --publish.");
            }
        });
    }

    public Option<bool> Quick { get; } = new("--quick") { Description = "Shrink every scenario to seconds, to check the console works (a test runs this).", Recursive = true };

    public Option<DirectoryInfo> Output { get; } = new("--output")
    {
        Description = "Where reports go; each run writes a new <timestamp> folder. Default: artifacts/perf.",
        DefaultValueFactory = _ => new DirectoryInfo(Path.Combine("artifacts", "perf")),
        Recursive = true,
    };

    public Option<DirectoryInfo?> Publish { get; } = new("--publish")
    {
        HelpName = "folder",
        Description = "Also write each scenario's report into <folder>/<scenario>/, replacing the one there: the repository keeps today's in docs/perf " +
            "(from the repository root: --publish docs/perf). Not with --quick.",
        Recursive = true,
    };

    /// <summary>Gets the options a report's command line leaves out: where the reports went says nothing about what was measured.</summary>
    public IReadOnlyList<Option> NotRecorded => [Output, Publish];

    public void AddTo(RootCommand root)
    {
        foreach (var option in new Option[] { Quick, Output, Publish })
        {
            root.Add(option);
        }
    }
}
