using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Peers;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Scenarios;
using ChannelPool.Perf.Scenarios.Balancing;
using ChannelPool.Perf.Scenarios.Broadcast;
using ChannelPool.Perf.Scenarios.Collaboration;
using ChannelPool.Perf.Scenarios.Headroom;
using ChannelPool.Perf.Scenarios.OrdinaryUse;
using ChannelPool.Perf.Scenarios.PollModes;
using ChannelPool.Perf.Scenarios.Proxies;
using ChannelPool.Perf.Scenarios.Redis;
using ChannelPool.Perf.Servers;
using Spectre.Console;

namespace ChannelPool.Perf.Cli;

/// <summary>
/// The perf console's commands: one per scenario and, with no command, the suite: every scenario the suite runs, against
/// embedded servers, with a report under <c>artifacts/perf/&lt;timestamp&gt;/</c>. The peers console builds the same
/// commands with its peers, which adds the floor scenario, the SignalR transports and the <c>peer</c> command.
/// </summary>
internal static class PerfCli
{
    /// <param name="peers">What the peers console adds; none here.</param>
    public static RootCommand Build(PerfPeers? peers = null)
    {
        peers ??= PerfPeers.None;
        var common = new CommonOptions();
        IReadOnlyList<IPerfScenario> scenarios = Scenarios(new PubSubTransportOptions(peers), peers);
        var suite = scenarios.Where(s => s.InSuite).ToList();
        var root = new RootCommand(
            $"ChannelPool perf console{(peers.Any ? " with its peers" : string.Empty)}. With no command, runs the suite: {string.Join(", ", suite.Select(s => s.Name))}, " +
            (peers.Any ? "against ours and SignalR's where there is a peer, " : "ChannelPool alone (the peers console, perf/ChannelPool.Perf.Peers, runs SignalR and the floor beside it), ") +
            "against servers it starts on 127.0.0.1, and writes a report (markdown and JSON) under --output.");
        common.AddTo(root);
        root.SetAction((parse, token) => RunAsync(parse, common, peers, "suite", suite, (scenario, context) => scenario.RunInSuiteAsync(context, token), token));

        foreach (var scenario in scenarios)
        {
            root.Add(BuildCommand(common, peers, scenario.Name, scenario.Description, [scenario]));
        }

        if (peers.Any)
        {
            var peerTransports = new PubSubTransportOptions(peers, allByDefault: true);
            root.Add(BuildCommand(
                common,
                peers,
                "peer",
                "The broadcast and collaboration scripts against ours and ASP.NET Core SignalR (long polling and WebSockets), side by side in one run.",
                [new BroadcastScenario(peerTransports), new CollaborationScenario(peerTransports)]));
        }

        root.Add(BuildServe(peers));
        return root;
    }

    /// <summary>Every scenario with a command of its own; the suite runs those it runs in this order.</summary>
    private static IPerfScenario[] Scenarios(PubSubTransportOptions transports, PerfPeers peers) =>
    [
        new ProxiesScenario(),
        new HeadroomScenario(),
        new OriginalScenario(),
        new PollModesScenario(),
        .. peers.Scenarios,
        new BroadcastScenario(transports),
        new CollaborationScenario(transports),
        new RedisScenario(),
        new AsyncCallersScenario(),
        new OneCallerScenario(),
        new BalancingScenario(),
    ];

    private static Command BuildCommand(CommonOptions common, PerfPeers peers, string name, string description, IReadOnlyList<IPerfScenario> scenarios)
    {
        var command = new Command(name, description);
        foreach (var scenario in scenarios)
        {
            scenario.AddOptions(command);
        }

        command.SetAction((parse, token) => RunAsync(parse, common, peers, name, scenarios, (scenario, context) => scenario.RunAsync(context, parse, token), token));
        return command;
    }

    /// <summary>The embedded servers for a console in another process.</summary>
    private static Command BuildServe(PerfPeers peers)
    {
        var command = new Command("serve", "Runs the embedded servers for another perf console process (used internally).") { Hidden = true };
        command.SetAction((_, _) => ServerProcess.ServeAsync(new PerfServerSettings(), peers, Console.In, Console.Out));
        return command;
    }

    /// <summary>Starts the servers, runs each scenario, prints and writes the report (and publishes it when asked); returns the exit code.</summary>
    private static async Task<int> RunAsync(
        ParseResult parse,
        CommonOptions common,
        PerfPeers peers,
        string name,
        IReadOnlyList<IPerfScenario> scenarios,
        Func<IPerfScenario, PerfContext, Task<ReportSection>> run,
        CancellationToken cancellationToken)
    {
        var console = CreateConsole(parse.InvocationConfiguration.Output);
        var quick = parse.GetValue(common.Quick);
        ClientHttp.RaiseOpenFileLimit();
        var serverSettings = new PerfServerSettings();
        var server = scenarios.Any(s => s.UsesEmbeddedServers) ? await StartServerAsync(peers, serverSettings, console, cancellationToken) : null;
        var settings = new Dictionary<string, string>
        {
            ["Mode"] = quick ? "quick (every scenario shrunk to check the console works; the figures mean little)" : name,
            ["Long-poll timeout (ours and SignalR's)"] = $"{serverSettings.PollTimeout.TotalSeconds:0.#} s",
            ["Loopback client addresses"] = PerfContext.LoopbackAddresses.ToString(CultureInfo.InvariantCulture),
            ["Client process open-file limit"] = ClientHttp.OpenFileLimit().ToString(CultureInfo.InvariantCulture),
        };
        var servers = server is null ? "started by the scenario itself" : $"embedded on loopback, {server.Kind}";
        var report = new PerfReport(RunInfo.Capture(CommandLine(parse, common.NotRecorded), servers, settings));
        var directory = PerfReport.NewDirectory(parse.GetValue(common.Output)!.FullName);
        await using (var context = new PerfContext(server, serverSettings, console, report, quick, peers))
        {
            try
            {
                foreach (var scenario in scenarios)
                {
                    var started = System.Diagnostics.Stopwatch.GetTimestamp();
                    var section = await run(scenario, context);
                    report.Sections.Add(section);
                    context.Print(section);

                    // What each scenario adds to the suite's time, for keeping the suite near ten minutes.
                    console.MarkupLine($"[grey]{Markup.Escape(scenario.Name)}: {System.Diagnostics.Stopwatch.GetElapsedTime(started).TotalSeconds:N0} s[/]");
                }
            }
            catch (Exception ex) when (ex is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
            {
                // A cancellation nobody asked for (a timed-out request, say) is a failure like any other.
                console.MarkupLine($"[red]The run failed:[/] {Markup.Escape(ex.Message)}");
                report.Sections.Add(new ReportSection("error", "The run failed", ex.ToString()));
                await report.WriteAsync(directory, CancellationToken.None);
                console.MarkupLine($"What was measured before the failure is in {Markup.Escape(directory)}; nothing was published.");
                return 1;
            }
        }

        await report.WriteAsync(directory, cancellationToken);
        console.WriteLine();
        console.MarkupLine($"Report: [bold]{Markup.Escape(Path.Combine(directory, "report.md"))}[/] (and results.json)");

        if (parse.GetValue(common.Publish) is { } publish)
        {
            foreach (var folder in await report.PublishAsync(publish.FullName, cancellationToken))
            {
                console.MarkupLine($"Published: [bold]{Markup.Escape(Path.Combine(folder, "report.md"))}[/]");
            }
        }

        return 0;
    }

    private static async Task<IPerfServer> StartServerAsync(PerfPeers peers, PerfServerSettings settings, IAnsiConsole console, CancellationToken cancellationToken)
    {
        console.MarkupLine("Starting the embedded servers (child process) on 127.0.0.1…");
        return await ServerProcess.StartAsync(settings, peers, cancellationToken);
    }

    private static IAnsiConsole CreateConsole(TextWriter output)
    {
        // Piped, redirected or NO_COLOR: plain text, no escape codes at all (Spectre's own NO_COLOR handling keeps bold).
        var plain = !ReferenceEquals(output, Console.Out) || Console.IsOutputRedirected || !string.IsNullOrEmpty(Environment.GetEnvironmentVariable("NO_COLOR"));
        var console = plain
            ? AnsiConsole.Create(new AnsiConsoleSettings { Out = new AnsiConsoleOutput(output), Interactive = InteractionSupport.No, Ansi = AnsiSupport.No, ColorSystem = ColorSystemSupport.NoColors })
            : AnsiConsole.Console;
        if (!console.Profile.Capabilities.Interactive || Console.IsOutputRedirected)
        {
            // Redirected to a file or a CI log: no terminal width to fit, so do not squeeze the tables into 80 columns.
            console.Profile.Width = Math.Max(console.Profile.Width, 160);
        }

        return console;
    }

    /// <summary>The command as a reader would retype it: arguments with spaces quoted, and where the reports went left out.</summary>
    /// <param name="notRecorded">Options left out, with their values.</param>
    /// <returns>For example <c>ChannelPool.Perf proxies --kind singleton "pooled reuse"</c>.</returns>
    internal static string CommandLine(ParseResult parse, IReadOnlyList<Option> notRecorded)
    {
        var words = new List<string> { "ChannelPool.Perf" };
        var skipping = false;
        foreach (var token in parse.Tokens)
        {
            if (token.Type == TokenType.Option)
            {
                skipping = notRecorded.Any(o => o.Name == token.Value || o.Aliases.Contains(token.Value));
            }
            else if (token.Type != TokenType.Argument)
            {
                skipping = false;
            }

            if (!skipping)
            {
                words.Add(token.Value.Any(c => char.IsWhiteSpace(c) || c is '"' or '\'') ? $"\"{token.Value.Replace("\"", "\\\"", StringComparison.Ordinal)}\"" : token.Value);
            }
        }

        return string.Join(' ', words);
    }
}
