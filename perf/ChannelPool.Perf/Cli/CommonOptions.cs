using System.CommandLine;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Cli;

/// <summary>Options every command takes: how big the run is, where its servers run, and where its reports go.</summary>
internal sealed class CommonOptions
{
    /// <summary>Initializes a new instance of the <see cref="CommonOptions"/> class.</summary>
    public CommonOptions()
    {
        Server.AcceptOnlyFromAmong("child-process", "in-process");

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

    public Option<string> Server { get; } = new("--server")
    {
        Description = "Where the embedded servers run: child-process (default; client and server each get their own file descriptors, heap and CPU figures) or in-process.",
        DefaultValueFactory = _ => "child-process",
        Recursive = true,
    };

    public Option<Uri?> Endpoint { get; } = new("--server-url")
    {
        Description = "Run the pub/sub scenarios against a perf server elsewhere (the base address of `ChannelPool.Perf serve`), instead of starting one.",
        Recursive = true,
        CustomParser = result =>
        {
            var text = result.Tokens.Count == 1 ? result.Tokens[0].Value : string.Empty;
            if (Uri.TryCreate(text, UriKind.Absolute, out var uri) && uri.Scheme is "http" or "https")
            {
                return uri;
            }

            result.AddError($"--server-url must be an absolute http:// or https:// address; got '{text}'.");
            return null;
        },
    };

    public Option<int> LoopbackAddresses { get; } = Recursive(PositiveInt("--loopback-addresses", "Local addresses (127.0.0.1 up) clients connect from, so thousands of them do not run out of ephemeral ports.", 4, max: 254));

    public Option<double> PollTimeout { get; } = Recursive(PositiveDouble("--poll-timeout", "Seconds the servers hold a long poll before an empty answer, ours and SignalR's alike.", 15));

    public Option<int> FloodWindow { get; } = Recursive(PositiveInt("--flood-window", "How many messages one MultipleMessagesPerPoll response may carry in poll-modes.", 256, max: 1_000_000));

    /// <summary>Gets the options a report's command line leaves out: where the reports went says nothing about what was measured.</summary>
    public IReadOnlyList<Option> NotRecorded => [Output, Publish];

    public void AddTo(RootCommand root)
    {
        foreach (var option in new Option[] { Quick, Output, Publish, Server, Endpoint, LoopbackAddresses, PollTimeout, FloodWindow })
        {
            root.Add(option);
        }
    }

    private static Option<T> Recursive<T>(Option<T> option)
    {
        option.Recursive = true;
        return option;
    }
}
