using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Text.Json;
using ChannelPool.Perf.Peers;

namespace ChannelPool.Perf.Servers;

/// <summary>
/// A perf server in a child process (this same program, <c>serve</c> command, or the peers console when it runs). Clients and server then have a process
/// each: their own file-descriptor limit (thousands of clients need thousands of sockets on each side), their own
/// heap, and separate CPU and allocation figures. The two talk over the child's standard input and output: one line
/// <c>READY {json}</c> when it listens, <c>STATS {json}</c> in answer to <c>stats</c>, <c>SETTLED</c> after a full
/// garbage collection in answer to <c>settle</c>, and it exits on <c>exit</c> or
/// when its input closes, so it never outlives the console.
/// </summary>
internal sealed class ServerProcess : IPerfServer
{
    internal const string ReadyPrefix = "READY ";
    internal const string StatsPrefix = "STATS ";
    internal const string SettledPrefix = "SETTLED";
    private readonly Process _process;
    private readonly SemaphoreSlim _oneQuestionAtATime = new(1, 1);

    private ServerProcess(Process process, PerfEndpoints endpoints)
    {
        _process = process;
        Endpoints = endpoints;
    }

    public PerfEndpoints Endpoints { get; }

    public string Kind => "child process";

    public static async Task<ServerProcess> StartAsync(PerfServerSettings settings, PerfPeers peers, CancellationToken cancellationToken)
    {
        var start = new ProcessStartInfo(DotnetHost())
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = false,
            UseShellExecute = false,
        };
        start.ArgumentList.Add("exec");
        start.ArgumentList.Add(peers.Program.Location);
        start.ArgumentList.Add("serve");

        var process = Process.Start(start) ?? throw new InvalidOperationException($"Could not start the server process: {start.FileName}.");
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(TimeSpan.FromSeconds(60));
            while (true)
            {
                var line = await process.StandardOutput.ReadLineAsync(timeout.Token)
                    ?? throw new InvalidOperationException($"The server process exited (code {(process.WaitForExit(5000) ? process.ExitCode : -1)}) before it was ready.");
                if (line.StartsWith(ReadyPrefix, StringComparison.Ordinal))
                {
                    var ready = JsonSerializer.Deserialize<ReadyMessage>(line.AsSpan(ReadyPrefix.Length), Wire.Json)!;
                    return new ServerProcess(process, ready.ToEndpoints());
                }
            }
        }
        catch
        {
            process.Kill(entireProcessTree: true);
            process.Dispose();
            throw;
        }
    }

    public async Task<ServerStats> GetStatsAsync(CancellationToken cancellationToken) =>
        JsonSerializer.Deserialize<ServerStats>(await AskAsync("stats", StatsPrefix, cancellationToken), Wire.Json)!;

    public Task SettleAsync(CancellationToken cancellationToken) => AskAsync("settle", SettledPrefix, cancellationToken);

    /// <summary>Sends <paramref name="command"/> and returns what follows <paramref name="answerPrefix"/> on the answer's line.</summary>
    private async Task<string> AskAsync(string command, string answerPrefix, CancellationToken cancellationToken)
    {
        await _oneQuestionAtATime.WaitAsync(cancellationToken);
        try
        {
            await _process.StandardInput.WriteLineAsync(command.AsMemory(), cancellationToken);
            await _process.StandardInput.FlushAsync(cancellationToken);
            while (true)
            {
                var line = await _process.StandardOutput.ReadLineAsync(cancellationToken)
                    ?? throw new InvalidOperationException("The server process exited.");
                if (line.StartsWith(answerPrefix, StringComparison.Ordinal))
                {
                    return line[answerPrefix.Length..];
                }
            }
        }
        finally
        {
            _oneQuestionAtATime.Release();
        }
    }

    public async ValueTask DisposeAsync()
    {
        try
        {
            await _process.StandardInput.WriteLineAsync("exit");
            _process.StandardInput.Close();
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(15));
            await _process.WaitForExitAsync(timeout.Token);
        }
        catch (Exception ex) when (ex is IOException or OperationCanceledException or InvalidOperationException)
        {
            _process.Kill(entireProcessTree: true);
        }
        finally
        {
            _process.Dispose();
            _oneQuestionAtATime.Dispose();
        }
    }

    /// <summary>Runs the child's side: serves until told to exit or until the console's end of the pipe closes.</summary>
    public static async Task<int> ServeAsync(PerfServerSettings settings, PerfPeers peers, TextReader input, TextWriter output)
    {
        await using var server = await PerfServer.StartAsync(settings, peers, CancellationToken.None);
        await output.WriteLineAsync(ReadyPrefix + JsonSerializer.Serialize(ReadyMessage.From(server.Endpoints), Wire.Json));
        await output.FlushAsync();
        while (await input.ReadLineAsync() is { } command)
        {
            switch (command.Trim())
            {
                case "stats":
                    await output.WriteLineAsync(StatsPrefix + JsonSerializer.Serialize(server.ReadStats(), Wire.Json));
                    await output.FlushAsync();
                    break;
                case "settle":
                    PerfServer.Settle();
                    await output.WriteLineAsync(SettledPrefix);
                    await output.FlushAsync();
                    break;
                case "exit":
                    return 0;
                default:
                    await Console.Error.WriteLineAsync($"Unknown server command '{command}'; expected stats, settle or exit.");
                    break;
            }
        }

        return 0;
    }

    /// <summary>The dotnet host that runs this program: the one this runtime belongs to, not whatever is first on PATH.</summary>
    private static string DotnetHost()
    {
        var name = RuntimeInformation.IsOSPlatform(OSPlatform.Windows) ? "dotnet.exe" : "dotnet";
        if (Environment.ProcessPath is { } current && Path.GetFileName(current) == name)
        {
            return current;
        }

        // The runtime lives in <root>/shared/Microsoft.NETCore.App/<version>/; the host is <root>/dotnet.
        var root = Path.GetFullPath(Path.Combine(RuntimeEnvironment.GetRuntimeDirectory(), "..", "..", ".."));
        var host = Path.Combine(root, name);
        return File.Exists(host) ? host : name;
    }

    private sealed record ReadyMessage(string Http, string? Http2, WcfEndpoints? Wcf)
    {
        public static ReadyMessage From(PerfEndpoints endpoints) => new(endpoints.Http.AbsoluteUri, endpoints.Http2?.AbsoluteUri, endpoints.Wcf);

        public PerfEndpoints ToEndpoints() => new(new Uri(Http), Wcf) { Http2 = Http2 is null ? null : new Uri(Http2) };
    }

    private static class Wire
    {
        public static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web);
    }
}
