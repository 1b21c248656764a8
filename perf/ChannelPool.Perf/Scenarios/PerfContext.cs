using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Servers;
using Spectre.Console;

namespace ChannelPool.Perf.Scenarios;

/// <summary>What every scenario of one run shares: the server, the clients' HTTP handler, the console and the report.</summary>
internal sealed class PerfContext : IAsyncDisposable
{
    private readonly SocketsHttpHandler _handler;
    private readonly IPerfServer? _server;

    /// <summary>Initializes a new instance of the <see cref="PerfContext"/> class.</summary>
    /// <param name="server">The embedded or remote servers, or <see langword="null"/> when the scenarios start their own.</param>
    /// <param name="serverSettings">What the servers were started with.</param>
    /// <param name="console">Where progress and tables go.</param>
    /// <param name="report">The run's report.</param>
    /// <param name="loopbackAddresses">Local addresses clients connect from.</param>
    /// <param name="quick">Whether this is a <c>--quick</c> run.</param>
    public PerfContext(IPerfServer? server, PerfServerSettings serverSettings, IAnsiConsole console, PerfReport report, int loopbackAddresses, bool quick)
    {
        _server = server;
        ServerSettings = serverSettings;
        Console = console;
        Report = report;
        Quick = quick;
        LoopbackAddresses = loopbackAddresses;
        _handler = ClientHttp.CreateHandler(loopbackAddresses);
        Http = new HttpClient(_handler, disposeHandler: false) { Timeout = Timeout.InfiniteTimeSpan };
    }

    /// <summary>Gets the servers the scenarios call.</summary>
    /// <exception cref="InvalidOperationException">The command's scenarios start their own servers, so none was started for them.</exception>
    public IPerfServer Server => _server ?? throw new InvalidOperationException("No embedded servers were started for this command: its scenarios start their own.");

    /// <summary>Gets what the servers were started with (the flood window, the long-poll timeout).</summary>
    public PerfServerSettings ServerSettings { get; }

    public IAnsiConsole Console { get; }

    public PerfReport Report { get; }

    public bool Quick { get; }

    public int LoopbackAddresses { get; }

    /// <summary>Gets the handler every simulated client shares (WebSocket clients connect through it too).</summary>
    public HttpMessageHandler Handler => _handler;

    public HttpClient Http { get; }

    /// <summary>Gets or sets whether the scenario runs its own servers in this process (the redis command's nodes), so each client costs two sockets here.</summary>
    public bool ServesInProcess { get; set; }

    /// <summary>
    /// Gets how many simulated clients this process can hold: each is a socket, and so, when the server runs in this
    /// process too, is the server's end of it.
    /// </summary>
    public int ClientCapacity
    {
        get
        {
            var limit = ClientHttp.OpenFileLimit();
            var perClient = _server?.Kind == "in-process" || ServesInProcess ? 2.2 : 1.1;
            return (int)Math.Clamp((limit - 512) / perClient, 1, 1_000_000);
        }
    }

    /// <summary>Prints a finished section's tables and target checks.</summary>
    public void Print(ReportSection section) => Print(section, section.Tables);

    /// <summary>
    /// Prints, once every section has run, each section's first table (its answer) and every target check again, so
    /// that the end of a long run shows the whole result without scrolling back or opening the report.
    /// </summary>
    public void PrintSummary(IReadOnlyList<ReportSection> sections)
    {
        Console.WriteLine();
        Console.Write(new Rule("[bold]Summary[/]").LeftJustified());
        foreach (var section in sections)
        {
            Print(section, section.Tables.Take(1));
        }
    }

    private void Print(ReportSection section, IEnumerable<ReportTable> tables)
    {
        Console.WriteLine();
        Console.Write(new Rule($"[bold]{Markup.Escape(section.Title)}[/]").LeftJustified());
        foreach (var table in tables)
        {
            var grid = new Table().Title(Markup.Escape(table.Title)).Border(TableBorder.Rounded);
            foreach (var column in table.Columns)
            {
                grid.AddColumn(Markup.Escape(column));
            }

            foreach (var row in table.Rows)
            {
                grid.AddRow([.. row.Select(Markup.Escape)]);
            }

            Console.Write(grid);
        }

        if (Quick && section.Targets.Count > 0)
        {
            Console.MarkupLine("[grey]Quick run: these figures check that the console works and are not measurements, so no target is judged.[/]");
        }

        foreach (var target in section.Targets)
        {
            var (colour, verdict) = target.Met switch
            {
                _ when Quick => ("grey", "not judged (quick)"),
                true => ("green", "met"),
                false => ("red", "missed"),
                null => ("yellow", "not measured"),
            };
            Console.MarkupLine($"[{colour}]{verdict}[/] {Markup.Escape(target.Target)}: {Markup.Escape(target.Measured)}{(target.Shortfall is null ? string.Empty : " — " + Markup.Escape(target.Shortfall))}");
        }

        foreach (var note in section.Notes)
        {
            Console.MarkupLine($"[grey]{Markup.Escape(note)}[/]");
        }
    }

    public async ValueTask DisposeAsync()
    {
        Http.Dispose();
        _handler.Dispose();
        if (_server is not null)
        {
            await _server.DisposeAsync();
        }
    }
}
