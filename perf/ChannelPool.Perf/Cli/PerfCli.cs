using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Peers.SignalR;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Scenarios;
using ChannelPool.Perf.Servers;
using ChannelPool.PollingDuplex;
using Spectre.Console;

namespace ChannelPool.Perf.Cli;

/// <summary>
/// The perf console's commands. With no command it runs the suite: about nine minutes of every scenario against embedded
/// servers, with a report under <c>artifacts/perf/&lt;timestamp&gt;/</c>.
/// </summary>
internal static class PerfCli
{
    public const string PollingDuplex = "polling-duplex";
    public const string SignalRLongPolling = "signalr-longpolling";
    public const string SignalRWebSockets = "signalr-websockets";

    private static readonly string[] AllTransports = [PollingDuplex, SignalRLongPolling, SignalRWebSockets];

    public static RootCommand Build()
    {
        var common = new CommonOptions();
        var root = new RootCommand(
            "ChannelPool perf console. With no command, runs the suite: proxies, poll-modes, broadcast and collaboration against ours and SignalR's, " +
            "about nine minutes in all on two cores, against servers it starts on 127.0.0.1, and writes a report (markdown, JSON, charts) under --output.");
        common.AddTo(root);
        root.SetAction((parse, token) => RunAsync(parse, common, "suite", context => RunSuiteAsync(context, parse, common, token), token));

        root.Add(BuildProxies(common));
        root.Add(BuildOriginal(common));
        root.Add(BuildBroadcast(common, "broadcast", "The original's broadcast script: the largest M clients on one topic for which every one of K bursts, one every P seconds, arrives before the next.", [PollingDuplex]));
        root.Add(BuildCollaboration(common, "collaboration", "The original's collaboration script: T topics × N clients, one publishes and the rest receive, every D; publish-to-receipt latency.", [PollingDuplex]));
        root.Add(BuildPollModes(common));
        root.Add(BuildPeer(common));
        root.Add(BuildServe());
        root.Add(RedisScaleOutScenario.Build());
        return root;
    }

    private static Command BuildProxies(CommonOptions common)
    {
        var options = new ProxiesOptions();
        var command = new Command(
            "proxies",
            "Per-call, per-call with a cached factory, pooled single-use, pooled reuse (alone and shared) and singleton WCF proxies on WSHttp with a security context (the original's scenario), net.tcp (TLS), BasicHttps and WSHttp with UserName, " +
            "at several concurrencies: calls/s, latency percentiles, CPU and bytes per call, server handshakes and sessions.");
        options.AddTo(command, withConcurrency: true);
        command.SetAction((parse, token) => RunAsync(parse, common, "proxies", async context =>
        {
            var quick = common.IsQuick(parse);
            var settings = new ProxiesSettings
            {
                Calls = Pick(parse, options.Calls, quick, 40),
                Concurrency = Pick(parse, options.Concurrency, quick, [1, 8]),
                Bindings = options.Bindings(parse),
                Kinds = options.Kinds(parse),
                Rounds = Pick(parse, options.Rounds, quick, 1),
            };
            await RunProxiesAsync(context, quick ? ProxiesOptions.QuickWarmUp(settings) : settings, token);
        }, token));
        return command;
    }

    private static Command BuildOriginal(CommonOptions common)
    {
        var options = new ProxiesOptions();
        var command = new Command(
            "original",
            "The original 2007 pool's run, redone: 20,000 calls by one caller through per-call, pooled single-use and singleton WCF proxies, timed beside its 6:31, 4:48 and 1:05.");
        options.AddTo(command, withConcurrency: false);
        command.SetAction((parse, token) => RunAsync(parse, common, "original", async context =>
        {
            var quick = common.IsQuick(parse);
            var settings = new ProxiesSettings
            {
                Calls = Pick(parse, options.Calls, quick, 40),
                Concurrency = [1],
                Bindings = options.Bindings(parse),
                Kinds = [ProxiesScenario.PerCall, ProxiesScenario.PooledSingleUse, ProxiesScenario.Singleton],
                Rounds = 1,
                Original = true,
            };
            await RunProxiesAsync(context, quick ? ProxiesOptions.QuickWarmUp(settings) : settings, token);
        }, token));
        return command;
    }

    private static Command BuildBroadcast(CommonOptions common, string name, string description, string[] defaultTransports)
    {
        var options = new BroadcastOptions(defaultTransports);
        var command = new Command(name, description);
        options.AddTo(command);
        command.SetAction((parse, token) => RunAsync(parse, common, name, async context =>
        {
            var settings = options.Read(parse, common.IsQuick(parse));
            await RunBroadcastAsync(context, settings, options.Transports(parse, context), token);
        }, token));
        return command;
    }

    private static Command BuildCollaboration(CommonOptions common, string name, string description, string[] defaultTransports)
    {
        var options = new CollaborationOptions(defaultTransports);
        var command = new Command(name, description);
        options.AddTo(command);
        command.SetAction((parse, token) => RunAsync(parse, common, name, async context =>
        {
            var settings = options.Read(parse, common.IsQuick(parse));
            await RunCollaborationAsync(context, settings, options.Transports(parse, context), token);
        }, token));
        return command;
    }

    private static Command BuildPeer(CommonOptions common)
    {
        var broadcast = new BroadcastOptions(AllTransports);
        var collaboration = new CollaborationOptions(AllTransports, includeTransportOption: false);
        var command = new Command("peer", "The broadcast and collaboration scripts against ours and ASP.NET Core SignalR (long polling and WebSockets), side by side in one run.");
        broadcast.AddTo(command);
        collaboration.AddTo(command);
        command.SetAction((parse, token) => RunAsync(parse, common, "peer", async context =>
        {
            var quick = common.IsQuick(parse);
            var transports = broadcast.Transports(parse, context);
            await RunBroadcastAsync(context, broadcast.Read(parse, quick), transports, token);
            await RunCollaborationAsync(context, collaboration.Read(parse, quick), transports, token);
        }, token));
        return command;
    }

    private static Command BuildPollModes(CommonOptions common)
    {
        var seconds = PositiveDouble("--duration", "Seconds each cell is measured, after a warm-up.", 5);
        var streams = PositiveInt("--streams", "Streams side by side per cell.", 4, max: 256);
        var size = PositiveInt("--size", "Message size in bytes.", 256);
        var rounds = PositiveInt("--rounds", "Interleaved rounds per cell; each cell reports its median.", 3, max: 100);
        size.Validators.Add(r =>
        {
            var value = r.GetValueOrDefault<int>();
            if (value is < FloodPayload.MinSize or > FloodPayload.MaxSize)
            {
                r.AddError($"--size must be from {FloodPayload.MinSize} to {FloodPayload.MaxSize} bytes; got {value}.");
            }
        });
        var command = new Command("poll-modes", "Server-to-client throughput of SingleMessagePerPoll, MultipleMessagesPerPoll and a raw WebSocket baseline, in binary and text.")
        {
            seconds, streams, size, rounds,
        };
        command.SetAction((parse, token) => RunAsync(parse, common, "poll-modes", async context =>
        {
            var quick = common.IsQuick(parse);
            var settings = new PollModesSettings
            {
                Duration = TimeSpan.FromSeconds(Pick(parse, seconds, quick, 1.0)),
                WarmUp = quick ? TimeSpan.FromSeconds(0.3) : TimeSpan.FromSeconds(1),
                Streams = Pick(parse, streams, quick, 2),
                MessageSize = parse.GetValue(size),
                Rounds = Pick(parse, rounds, quick, 1),
            };
            await RunPollModesAsync(context, settings, common.FloodWindow(parse), token);
        }, token));
        return command;
    }

    private static Command BuildServe()
    {
        var pollTimeout = PositiveDouble("--poll-timeout", "Seconds a long poll is held.", 15);
        var floodWindow = PositiveInt("--flood-window", "The flood endpoint's MaxPendingMessagesPerSession.", 256);
        var wcf = new Option<bool>("--wcf") { Description = "Start the WCF test services.", DefaultValueFactory = _ => true };
        var command = new Command("serve", "Runs the embedded servers for another perf console process (used internally).") { pollTimeout, floodWindow, wcf };
        command.Hidden = true;
        command.SetAction((parse, _) => ServerProcess.ServeAsync(
            new PerfServerSettings { PollTimeout = TimeSpan.FromSeconds(parse.GetValue(pollTimeout)), FloodWindow = parse.GetValue(floodWindow), Wcf = parse.GetValue(wcf) },
            Console.In,
            Console.Out));
        return command;
    }

    /// <summary>The suite: every scenario, sized to take about nine minutes on two cores.</summary>
    private static async Task RunSuiteAsync(PerfContext context, ParseResult parse, CommonOptions common, CancellationToken cancellationToken)
    {
        var quick = common.IsQuick(parse);
        await RunProxiesAsync(context, quick ? ProxiesOptions.QuickSettings : ProxiesOptions.SuiteSettings, cancellationToken);
        await RunPollModesAsync(
            context,
            new PollModesSettings { Duration = TimeSpan.FromSeconds(quick ? 1 : 2), WarmUp = TimeSpan.FromSeconds(quick ? 0.3 : 1), Streams = quick ? 2 : 4, Rounds = quick ? 1 : 3 },
            common.FloodWindow(parse),
            cancellationToken);
        var transports = TransportsFor(context, AllTransports, PollingDuplexMode.MultipleMessagesPerPoll, DuplexEncoding.Binary);
        await RunBroadcastAsync(context, quick ? BroadcastOptions.QuickSettings : BroadcastOptions.SuiteSettings, transports, cancellationToken);
        await RunCollaborationAsync(context, quick ? CollaborationOptions.QuickSettings : CollaborationOptions.SuiteSettings, transports, cancellationToken);
    }

    private static async Task RunProxiesAsync(PerfContext context, ProxiesSettings settings, CancellationToken cancellationToken)
    {
        var results = await new ProxiesScenario(context, settings).RunAsync(cancellationToken);
        Add(context, ProxiesScenario.Describe(results, settings, context.Server.Kind));
    }

    private static async Task RunPollModesAsync(PerfContext context, PollModesSettings settings, int floodWindow, CancellationToken cancellationToken)
    {
        var results = await new PollModesScenario(context, settings).RunAsync(cancellationToken);
        Add(context, PollModesScenario.Describe(results, settings, floodWindow));
    }

    private static async Task RunBroadcastAsync(PerfContext context, BroadcastSettings settings, IReadOnlyList<IPubSubTransport> transports, CancellationToken cancellationToken)
    {
        var results = await new BroadcastScenario(context, settings).RunAsync(transports, cancellationToken);
        Add(context, BroadcastScenario.Describe(results, settings));
    }

    private static async Task RunCollaborationAsync(PerfContext context, CollaborationSettings settings, IReadOnlyList<IPubSubTransport> transports, CancellationToken cancellationToken)
    {
        var results = await new CollaborationScenario(context, settings).RunAsync(transports, cancellationToken);
        Add(context, CollaborationScenario.Describe(results, settings));
    }

    private static void Add(PerfContext context, ReportSection section)
    {
        context.Report.Sections.Add(section);
        context.Print(section);
    }

    /// <summary>Starts the servers, runs <paramref name="body"/>, and writes the report; returns the exit code.</summary>
    private static async Task<int> RunAsync(ParseResult parse, CommonOptions common, string name, Func<PerfContext, Task> body, CancellationToken cancellationToken)
    {
        var output = parse.InvocationConfiguration.Output;

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

        var quick = common.IsQuick(parse);
        var serverSettings = new PerfServerSettings { FloodWindow = common.FloodWindow(parse), PollTimeout = TimeSpan.FromSeconds(parse.GetValue(common.PollTimeout)) };
        IPerfServer server;
        var remote = parse.GetValue(common.Endpoint);
        if (remote is not null)
        {
            server = new RemotePerfServer(new PerfEndpoints(remote, null));
        }
        else
        {
            console.MarkupLine($"Starting the embedded servers ({Markup.Escape(parse.GetValue(common.Server)!)}) on 127.0.0.1…");
            server = parse.GetValue(common.Server) == "in-process"
                ? await PerfServer.StartAsync(serverSettings, cancellationToken)
                : await ServerProcess.StartAsync(serverSettings, cancellationToken);
        }

        var settings = new Dictionary<string, string>
        {
            ["Mode"] = quick ? "quick (every scenario shrunk to check the console works; the figures mean little)" : name,
            ["Long-poll timeout (ours and SignalR's)"] = $"{serverSettings.PollTimeout.TotalSeconds:0.#} s",
            ["Loopback client addresses"] = parse.GetValue(common.LoopbackAddresses).ToString(CultureInfo.InvariantCulture),
            ["Client process open-file limit"] = ClientHttp.OpenFileLimit().ToString(CultureInfo.InvariantCulture),
        };
        var report = new PerfReport(RunInfo.Capture("ChannelPool.Perf " + string.Join(' ', parse.Tokens.Select(t => t.Value)), server.Kind, settings));
        var directory = PerfReport.NewDirectory(parse.GetValue(common.Output)!.FullName);
        await using (var context = new PerfContext(server, console, report, parse.GetValue(common.LoopbackAddresses), quick))
        {
            try
            {
                await body(context);
                if (report.Sections.Count > 1)
                {
                    context.PrintSummary(report.Sections);
                }
            }
            catch (Exception ex) when (ex is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
            {
                // A cancellation nobody asked for (a timed-out request, say) is a failure like any other.
                console.MarkupLine($"[red]The run failed:[/] {Markup.Escape(ex.Message)}");
                report.Sections.Add(new ReportSection("error", "The run failed", ex.ToString()));
                await report.WriteAsync(directory, CancellationToken.None);
                console.MarkupLine($"What was measured before the failure is in {Markup.Escape(directory)}.");
                return 1;
            }
        }

        var charts = await report.WriteAsync(directory, cancellationToken);
        console.WriteLine();
        console.MarkupLine($"Report: [bold]{Markup.Escape(Path.Combine(directory, "report.md"))}[/] (and results.json, {charts.Written.Count} chart(s))");
        if (charts.Problem is { } problem)
        {
            console.MarkupLine($"[yellow]Charts: {Markup.Escape(problem)}[/]");
        }

        return 0;
    }

    internal static IReadOnlyList<IPubSubTransport> TransportsFor(PerfContext context, IEnumerable<string> names, PollingDuplexMode mode, DuplexEncoding encoding) =>
        [.. names.Distinct().Select(name => name switch
        {
            PollingDuplex => (IPubSubTransport)new DuplexPubSubTransport(context.Http, context.Server.Endpoints.PubSub, encoding, mode),
            SignalRLongPolling => new SignalRTransport(context.Server.Endpoints.SignalR, SignalRTransportKind.LongPolling, context.Handler),
            SignalRWebSockets => new SignalRTransport(context.Server.Endpoints.SignalR, SignalRTransportKind.WebSockets, context.Handler),
            _ => throw new ArgumentException($"Unknown transport '{name}'.", nameof(names)),
        })];

    private static T Pick<T>(ParseResult parse, Option<T> option, bool quick, T quickValue) =>
        quick && parse.GetResult(option) is null or { Implicit: true } ? quickValue : parse.GetValue(option)!;

    internal static Option<int> PositiveInt(string name, string description, int defaultValue, int max = int.MaxValue)
    {
        var option = new Option<int>(name) { Description = $"{description} Default: {defaultValue.ToString(CultureInfo.InvariantCulture)}.", DefaultValueFactory = _ => defaultValue };
        option.Validators.Add(r =>
        {
            var value = r.GetValueOrDefault<int>();
            if (value < 1 || value > max)
            {
                r.AddError(max == int.MaxValue ? $"{name} must be at least 1; got {value}." : $"{name} must be from 1 to {max}; got {value}.");
            }
        });
        return option;
    }

    internal static Option<double> PositiveDouble(string name, string description, double defaultValue)
    {
        var option = new Option<double>(name) { Description = $"{description} Default: {defaultValue.ToString(CultureInfo.InvariantCulture)}.", DefaultValueFactory = _ => defaultValue };
        option.Validators.Add(r =>
        {
            var value = r.GetValueOrDefault<double>();
            if (!(value > 0) || double.IsInfinity(value))
            {
                r.AddError($"{name} must be a positive number; got {value.ToString(CultureInfo.InvariantCulture)}.");
            }
        });
        return option;
    }

    /// <summary>Options every command takes.</summary>
    private sealed class CommonOptions
    {
        public Option<bool> Quick { get; } = new("--quick") { Description = "Shrink every scenario to seconds, to check the console works (a test runs this).", Recursive = true };

        public Option<DirectoryInfo> Output { get; } = new("--output")
        {
            Description = "Where reports go; each run writes a new <timestamp> folder. Default: artifacts/perf.",
            DefaultValueFactory = _ => new DirectoryInfo(Path.Combine("artifacts", "perf")),
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

        public Option<int> LoopbackAddresses { get; } = PositiveInt("--loopback-addresses", "Local addresses (127.0.0.1 up) clients connect from, so thousands of them do not run out of ephemeral ports.", 4, max: 254);

        public Option<double> PollTimeout { get; } = PositiveDouble("--poll-timeout", "Seconds the servers hold a long poll before an empty answer, ours and SignalR's alike.", 15);

        public Option<int> FloodWindowOption { get; } = PositiveInt("--flood-window", "How many messages one MultipleMessagesPerPoll response may carry in poll-modes.", 256, max: 1_000_000);

        public bool IsQuick(ParseResult parse) => parse.GetValue(Quick);

        public int FloodWindow(ParseResult parse) => parse.GetValue(FloodWindowOption);

        public void AddTo(RootCommand root)
        {
            Server.AcceptOnlyFromAmong("child-process", "in-process");
            LoopbackAddresses.Recursive = true;
            PollTimeout.Recursive = true;
            FloodWindowOption.Recursive = true;
            root.Add(Quick);
            root.Add(Output);
            root.Add(Server);
            root.Add(Endpoint);
            root.Add(LoopbackAddresses);
            root.Add(PollTimeout);
            root.Add(FloodWindowOption);
        }
    }

    /// <summary>The options of the proxies and original commands, and the suite's proxies settings.</summary>
    private sealed class ProxiesOptions
    {
        /// <summary>The suite's proxies: every binding and kind at 1, 8 and 32, two interleaved rounds of at most 1.5 s per cell.</summary>
        public static ProxiesSettings SuiteSettings { get; } = new() { Calls = 4_000, Rounds = 2, MaxRoundTime = TimeSpan.FromSeconds(1.5), WarmUpTime = TimeSpan.FromSeconds(1.5) };

        public static ProxiesSettings QuickSettings { get; } = QuickWarmUp(new() { Calls = 40, Concurrency = [1, 8], Rounds = 1 });

        /// <summary>A warm-up of seconds is the point of a real run and a waste in a quick one.</summary>
        public static ProxiesSettings QuickWarmUp(ProxiesSettings settings) => settings with { WarmUpCalls = 40, WarmUpTime = TimeSpan.FromSeconds(0.5) };

        public Option<int> Calls { get; } = PositiveInt("--calls", "Calls per cell.", 20_000);

        public Option<int> Rounds { get; } = PositiveInt("--rounds", "Interleaved rounds each cell's calls are split into; the kinds take turns, in reverse order every other round.", 2, max: 100);

        public Option<int[]> Concurrency { get; } = new("--concurrency") { Description = "Concurrent callers; one cell per value. Default: 1 8 32.", DefaultValueFactory = _ => [1, 8, 32], AllowMultipleArgumentsPerToken = true };

        private Option<string[]> Binding { get; } = new("--binding")
        {
            Description = $"Bindings to run: {string.Join(", ", WcfBinding.All)}, or all (default).",
            DefaultValueFactory = _ => ["all"],
            AllowMultipleArgumentsPerToken = true,
        };

        private Option<string[]> Kind { get; } = new("--kind")
        {
            Description = $"Kinds of proxy to run: {string.Join(", ", ProxiesScenario.SelectableKinds.Select(k => $"'{k}'"))}. Default: all but the last, which measures the other idle order.",
            AllowMultipleArgumentsPerToken = true,
        };

        public void AddTo(Command command, bool withConcurrency)
        {
            Kind.AcceptOnlyFromAmong(ProxiesScenario.SelectableKinds);
            Concurrency.Validators.Add(r =>
            {
                foreach (var value in r.GetValueOrDefault<int[]>() ?? [])
                {
                    if (value is < 1 or > 1024)
                    {
                        r.AddError($"--concurrency values must be from 1 to 1024; got {value}.");
                    }
                }
            });
            Binding.Validators.Add(r =>
            {
                foreach (var name in r.GetValueOrDefault<string[]>() ?? [])
                {
                    if (name != "all" && !WcfBinding.All.Contains(name))
                    {
                        r.AddError($"Unknown --binding '{name}'; use {string.Join(", ", WcfBinding.All)} or all.");
                    }
                }
            });
            command.Add(Calls);
            command.Add(Binding);
            if (withConcurrency)
            {
                command.Add(Concurrency);
                command.Add(Rounds);
                command.Add(Kind);
            }
        }

        public string[] Kinds(ParseResult parse) => parse.GetValue(Kind) is { Length: > 0 } kinds ? [.. ProxiesScenario.SelectableKinds.Where(kinds.Contains)] : ProxiesScenario.AllKinds;

        public string[] Bindings(ParseResult parse)
        {
            var names = parse.GetValue(Binding)!;
            return names.Contains("all") ? WcfBinding.All : [.. WcfBinding.All.Where(names.Contains)];
        }
    }

    /// <summary>Which transports, and how our polling duplex clients run.</summary>
    private class TransportOptions(string[] defaults, bool includeTransportOption = true)
    {
        public Option<string[]> Transport { get; } = new("--transport")
        {
            Description = $"Transports to run: {string.Join(", ", AllTransports)}, or all. Default: {string.Join(' ', defaults)}.",
            DefaultValueFactory = _ => defaults,
            AllowMultipleArgumentsPerToken = true,
        };

        public Option<string> Mode { get; } = new("--mode") { Description = "Our clients' poll mode: multiple (default) or single.", DefaultValueFactory = _ => "multiple" };

        public Option<string> Encoding { get; } = new("--encoding") { Description = "Our clients' encoding: binary (default) or text.", DefaultValueFactory = _ => "binary" };

        public virtual void AddTo(Command command)
        {
            Mode.AcceptOnlyFromAmong("multiple", "single");
            Encoding.AcceptOnlyFromAmong("binary", "text");
            Transport.Validators.Add(r =>
            {
                foreach (var name in r.GetValueOrDefault<string[]>() ?? [])
                {
                    if (name != "all" && !AllTransports.Contains(name))
                    {
                        r.AddError($"Unknown --transport '{name}'; use {string.Join(", ", AllTransports)} or all.");
                    }
                }
            });
            if (includeTransportOption)
            {
                command.Add(Transport);
                command.Add(Mode);
                command.Add(Encoding);
            }
        }

        public IReadOnlyList<IPubSubTransport> Transports(ParseResult parse, PerfContext context)
        {
            var names = parse.GetValue(Transport)!;
            return TransportsFor(
                context,
                names.Contains("all") ? AllTransports : names,
                parse.GetValue(Mode) == "single" ? PollingDuplexMode.SingleMessagePerPoll : PollingDuplexMode.MultipleMessagesPerPoll,
                parse.GetValue(Encoding) == "text" ? DuplexEncoding.Text : DuplexEncoding.Binary);
        }
    }

    private sealed class BroadcastOptions(string[] defaults) : TransportOptions(defaults)
    {
        /// <summary>The suite's broadcast: P = 1 s only, K = 10.</summary>
        public static BroadcastSettings SuiteSettings { get; } = new() { Periods = [TimeSpan.FromSeconds(1)], Bursts = 10, ScoutBursts = 3 };

        public static BroadcastSettings QuickSettings { get; } = new()
        {
            Periods = [TimeSpan.FromSeconds(0.5)], Bursts = 2, ScoutBursts = 2, StartClients = 20, MaxClients = 40, Resolution = 0.5,
        };

        private Option<double[]> Periods { get; } = new("--periods") { Description = "Burst periods P in seconds. Default: 1 2 5 10.", DefaultValueFactory = _ => [1, 2, 5, 10], AllowMultipleArgumentsPerToken = true };

        private Option<int> Bursts { get; } = PositiveInt("--bursts", "K: consecutive bursts that must each arrive before the next is due.", 100);

        private Option<int> ScoutBursts { get; } = PositiveInt("--scout-bursts", "Bursts per scouting probe, before K confirms.", 5);

        private Option<int> StartClients { get; } = PositiveInt("--start-clients", "The first M tried.", 1000);

        private Option<int> MaxClients { get; } = PositiveInt("--max-clients", "The largest M tried (the open-file limit may cap it lower).", 20_000);

        public override void AddTo(Command command)
        {
            base.AddTo(command);
            Periods.Validators.Add(r =>
            {
                foreach (var p in r.GetValueOrDefault<double[]>() ?? [])
                {
                    if (!(p > 0) || p > 3600)
                    {
                        r.AddError($"--periods must be seconds above 0 and at most 3600; got {p.ToString(CultureInfo.InvariantCulture)}.");
                    }
                }
            });
            command.Add(Periods);
            command.Add(Bursts);
            command.Add(ScoutBursts);
            command.Add(StartClients);
            command.Add(MaxClients);
            command.Validators.Add(r =>
            {
                if (r.GetResult(StartClients) is { Implicit: false } && r.GetValue(StartClients) > r.GetValue(MaxClients))
                {
                    r.AddError($"--start-clients ({r.GetValue(StartClients)}) must not exceed --max-clients ({r.GetValue(MaxClients)}).");
                }
            });
        }

        public BroadcastSettings Read(ParseResult parse, bool quick)
        {
            var basis = quick ? QuickSettings : new BroadcastSettings();
            var settings = basis with
            {
                Periods = parse.GetResult(Periods) is { Implicit: false } ? [.. parse.GetValue(Periods)!.Select(TimeSpan.FromSeconds)] : basis.Periods,
                Bursts = Explicit(parse, Bursts) ?? basis.Bursts,
                ScoutBursts = Explicit(parse, ScoutBursts) ?? basis.ScoutBursts,
                StartClients = Explicit(parse, StartClients) ?? basis.StartClients,
                MaxClients = Explicit(parse, MaxClients) ?? basis.MaxClients,
            };
            return settings with { StartClients = Math.Min(settings.StartClients, settings.MaxClients) };
        }
    }

    private sealed class CollaborationOptions(string[] defaults, bool includeTransportOption = true) : TransportOptions(defaults, includeTransportOption)
    {
        /// <summary>The suite's collaboration: the original's seven rows, three iterations, every D at a tenth.</summary>
        public static CollaborationSettings SuiteSettings { get; } = new() { Rows = CollaborationRow.Original7, Iterations = 3, DelayScale = 0.1 };

        public static CollaborationSettings QuickSettings { get; } = new()
        {
            Rows = [new CollaborationRow(10, 2, TimeSpan.FromSeconds(0.1)), new CollaborationRow(4, 5, TimeSpan.FromSeconds(0.1))],
            Iterations = 2,
        };

        private Option<int> Iterations { get; } = PositiveInt("--iterations", "Publishes per topic (the original: at least 100).", 100);

        private Option<double> DelayScale { get; } = PositiveDouble("--delay-scale", "A factor on every D, to shorten a run (1 keeps the original's delays).", 1);

        private Option<string> Rows { get; } = new("--rows") { Description = "Which rows: original (the seven of the 2009 table), stretch, or all (default).", DefaultValueFactory = _ => "all" };

        private Option<string> Phase { get; } = new("--phase") { Description = "spread (default): topics publish out of step, evenly over D, as independent clients would; aligned: every topic publishes at the same instant (the worst case).", DefaultValueFactory = _ => "spread" };

        private Option<string[]> Row { get; } = new("--row") { Description = "A custom row T,N,D (D in seconds), instead of --rows; repeatable.", AllowMultipleArgumentsPerToken = false };

        public override void AddTo(Command command)
        {
            base.AddTo(command);
            Rows.AcceptOnlyFromAmong("original", "stretch", "all");
            Phase.AcceptOnlyFromAmong("spread", "aligned");
            Row.Validators.Add(r =>
            {
                foreach (var value in r.GetValueOrDefault<string[]>() ?? [])
                {
                    if (!TryParseRow(value, out _))
                    {
                        r.AddError($"--row must be T,N,D: topics (1 or more), clients per topic (2 or more) and seconds (0 or more); got '{value}'.");
                    }
                }
            });
            command.Add(Iterations);
            command.Add(DelayScale);
            command.Add(Rows);
            command.Add(Row);
            command.Add(Phase);
        }

        public CollaborationSettings Read(ParseResult parse, bool quick)
        {
            var basis = quick ? QuickSettings : new CollaborationSettings();
            IReadOnlyList<CollaborationRow> rows = parse.GetValue(Row) is { Length: > 0 } custom
                ? [.. custom.Select(v => TryParseRow(v, out var row) ? row : throw new ArgumentException($"Bad --row '{v}'."))]
                : parse.GetResult(Rows) is { Implicit: false }
                    ? parse.GetValue(Rows) switch
                    {
                        "original" => CollaborationRow.Original7,
                        "stretch" => CollaborationRow.Stretch,
                        _ => [.. CollaborationRow.Original7, .. CollaborationRow.Stretch],
                    }
                    : basis.Rows;
            return basis with
            {
                Rows = rows,
                Iterations = Explicit(parse, Iterations) ?? basis.Iterations,
                DelayScale = parse.GetResult(DelayScale) is { Implicit: false } ? parse.GetValue(DelayScale) : basis.DelayScale,
                Phase = parse.GetValue(Phase) == "aligned" ? CollaborationPhase.Aligned : CollaborationPhase.Spread,
            };
        }

        private static bool TryParseRow(string value, out CollaborationRow row)
        {
            row = null!;
            var parts = value.Split(',');
            if (parts.Length != 3
                || !int.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out var topics) || topics < 1
                || !int.TryParse(parts[1], NumberStyles.None, CultureInfo.InvariantCulture, out var clients) || clients < 2
                || !double.TryParse(parts[2], NumberStyles.Float, CultureInfo.InvariantCulture, out var delay) || !(delay >= 0) || delay > 3600)
            {
                return false;
            }

            row = new CollaborationRow(topics, clients, TimeSpan.FromSeconds(delay));
            return true;
        }
    }

    private static int? Explicit(ParseResult parse, Option<int> option) => parse.GetResult(option) is { Implicit: false } ? parse.GetValue(option) : null;
}
