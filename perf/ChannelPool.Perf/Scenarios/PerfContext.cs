using System.Net;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Peers;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Servers;
using Spectre.Console;

namespace ChannelPool.Perf.Scenarios;

/// <summary>What every scenario of one run shares: the server, the clients' HTTP handler, the console and the report.</summary>
internal sealed class PerfContext : IAsyncDisposable
{
    private SocketsHttpHandler _handler;
    private SocketsHttpHandler _http2Handler;
    private readonly IPerfServer? _server;

    /// <summary>Initializes a new instance of the <see cref="PerfContext"/> class.</summary>
    /// <param name="server">The embedded servers, or <see langword="null"/> when the scenarios start their own.</param>
    /// <param name="serverSettings">What the servers were started with.</param>
    /// <param name="console">Where progress and tables go.</param>
    /// <param name="quick">Whether this is a <c>--quick</c> run.</param>
    /// <param name="peers">The peer transports the pub/sub scenarios may name.</param>
    public PerfContext(IPerfServer? server, PerfServerSettings serverSettings, IAnsiConsole console, PerfReport report, bool quick, PerfPeers peers)
    {
        Peers = peers;
        _server = server;
        ServerSettings = serverSettings;
        Console = console;
        Report = report;
        Quick = quick;
        (_handler, Http, _http2Handler, Http2) = CreateClients(LoopbackAddresses);
    }

    private static (SocketsHttpHandler, HttpClient, SocketsHttpHandler, HttpClient) CreateClients(int loopbackAddresses)
    {
        var handler = ClientHttp.CreateHandler(loopbackAddresses);
        var http2Handler = ClientHttp.CreateHandler(loopbackAddresses);

        // The server allows PerfServer.Http2StreamsPerConnection streams a connection; more polls than that need more
        // connections, as a browser would open them.
        http2Handler.EnableMultipleHttp2Connections = true;
        return (
            handler,
            new HttpClient(handler, disposeHandler: false) { Timeout = Timeout.InfiniteTimeSpan },
            http2Handler,
            new HttpClient(http2Handler, disposeHandler: false)
            {
                Timeout = Timeout.InfiniteTimeSpan, DefaultRequestVersion = HttpVersion.Version20, DefaultVersionPolicy = HttpVersionPolicy.RequestVersionExact,
            });
    }

    /// <summary>
    /// Closes every pooled connection and starts the clients anew. A scenario after broadcast would otherwise inherit
    /// thousands of idle connections, which the server's keep-alive timeout (Kestrel's 130 s) closes all in the same
    /// second, wherever that falls, a one-second row's clock included. Nothing may hold the old clients: call it before a
    /// scenario makes its transports.
    /// </summary>
    public void RenewConnections()
    {
        var (handler, http, http2Handler, http2) = (_handler, Http, _http2Handler, Http2);
        (_handler, Http, _http2Handler, Http2) = CreateClients(LoopbackAddresses);
        http.Dispose();
        handler.Dispose();
        http2.Dispose();
        http2Handler.Dispose();
    }

    /// <summary>Gets the servers the scenarios call.</summary>
    /// <exception cref="InvalidOperationException">The command's scenarios start their own servers, so none was started for them.</exception>
    public IPerfServer Server => _server ?? throw new InvalidOperationException("No embedded servers were started for this command: its scenarios start their own.");

    /// <summary>Gets what the servers were started with (the flood window, the long-poll timeout).</summary>
    public PerfServerSettings ServerSettings { get; }

    public IAnsiConsole Console { get; }

    public PerfPeers Peers { get; }

    public PerfReport Report { get; }

    public bool Quick { get; }

    /// <summary>Local addresses (127.0.0.1 up) clients connect from, so thousands of them do not run out of ephemeral ports.</summary>
    public const int LoopbackAddresses = 4;

    /// <summary>Gets the handler every simulated client shares (WebSocket clients connect through it too).</summary>
    public HttpMessageHandler Handler => _handler;

    public HttpClient Http { get; private set; }

    /// <summary>Gets a client whose requests ask for HTTP/2 exactly (h2c with prior knowledge on cleartext addresses).</summary>
    public HttpClient Http2 { get; private set; }

    /// <summary>Gets the client for <paramref name="protocol"/>.</summary>
    /// <returns><see cref="Http"/> or <see cref="Http2"/>.</returns>
    public HttpClient HttpFor(ClientProtocol protocol) => protocol == ClientProtocol.Http2 ? Http2 : Http;

    /// <summary>Gets the handler for <paramref name="protocol"/>.</summary>
    /// <returns><see cref="Handler"/> or the HTTP/2 clients' handler.</returns>
    public HttpMessageHandler HandlerFor(ClientProtocol protocol) => protocol == ClientProtocol.Http2 ? _http2Handler : _handler;

    /// <summary>Gets the servers' base address for <paramref name="protocol"/>.</summary>
    /// <returns>The base address, ending in <c>/</c>.</returns>
    public Uri BaseAddress(ClientProtocol protocol) => protocol == ClientProtocol.Http2
        ? Server.Endpoints.Http2 ?? throw new InvalidOperationException("The servers gave no HTTP/2 address.")
        : Server.Endpoints.Http;

    /// <summary>Gets or sets whether the scenario runs its own servers in this process (the redis command's nodes), so each client costs two sockets here.</summary>
    public bool ServesInProcess { get; set; }

    /// <summary>
    /// Gets how many simulated clients of HTTP/1.1 this process can hold: each is a socket, and so, when the server runs
    /// in this process too, is the server's end of it.
    /// </summary>
    public int ClientCapacity => CapacityFor(ClientProtocol.Http11);

    /// <summary>
    /// Gets how many simulated clients speaking <paramref name="protocol"/> the open-file limit lets this process hold.
    /// Over HTTP/2 a client's poll is a stream, and up to <see cref="PerfServer.Http2StreamsPerConnection"/> share a socket.
    /// </summary>
    /// <param name="protocol">The protocol the clients speak.</param>
    /// <returns>The most clients the file descriptors allow (at most 1,000,000).</returns>
    public int CapacityFor(ClientProtocol protocol)
    {
        var limit = ClientHttp.OpenFileLimit();
        var perClient = ServesInProcess ? 2.2 : 1.1;
        if (protocol == ClientProtocol.Http2)
        {
            // Twice the streams' share: a client's send can be in flight beside its poll.
            perClient *= 2.0 / PerfServer.Http2StreamsPerConnection;
        }

        return (int)Math.Clamp((limit - 512) / perClient, 1, 1_000_000);
    }

    /// <summary>
    /// Collects garbage in the servers' process (when the run has servers) and in this one, so that set-up before a timed
    /// round leaves no collection to land inside it. The redis command's nodes run in this process, so this covers them.
    /// </summary>
    public async Task SettleAsync(CancellationToken cancellationToken)
    {
        if (_server is not null)
        {
            await _server.SettleAsync(cancellationToken);
        }

        PerfServer.Settle();
    }

    /// <summary>Prints a finished section's tables and target checks (a quick run's figures judge nothing).</summary>
    public void Print(ReportSection section)
    {
        Console.WriteLine();
        Console.Write(new Rule($"[bold]{Markup.Escape(section.Title)}[/]").LeftJustified());
        foreach (var table in section.Tables)
        {
            Console.Write(table.ToConsole());
        }

        foreach (var target in section.Targets)
        {
            var colour = Quick ? "grey" : target.Met switch { true => "green", false => "red", null => "yellow" };
            var verdict = Quick ? "not judged (quick)" : target.Verdict;
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
        Http2.Dispose();
        _http2Handler.Dispose();
        if (_server is not null)
        {
            await _server.DisposeAsync();
        }
    }
}
