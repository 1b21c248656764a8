using System.Diagnostics;
using System.Globalization;
using ChannelPool;
using ChannelPool.Demo;
using ChannelPool.Testing.Tls;
using Spectre.Console;

// Piped, redirected or NO_COLOR: plain text without escape codes, and a table as wide as it needs (no terminal to fit).
if (Console.IsOutputRedirected || !string.IsNullOrEmpty(Environment.GetEnvironmentVariable("NO_COLOR")))
{
    AnsiConsole.Console = AnsiConsole.Create(new AnsiConsoleSettings
    {
        Out = new AnsiConsoleOutput(Console.Out),
        Ansi = AnsiSupport.No,
        ColorSystem = ColorSystemSupport.NoColors,
        Interactive = InteractionSupport.No,
    });
    AnsiConsole.Console.Profile.Width = 160;
}

// Usage: ChannelPool.Demo [calls] [concurrency]
if (!DemoArguments.TryParse(args, out var calls, out var concurrency, out var usageError))
{
    AnsiConsole.MarkupLine($"[red]{Markup.Escape(usageError)}[/]");
    AnsiConsole.WriteLine("Usage: dotnet run --project samples/ChannelPool.Demo -- [calls (1-1000000, default 2000)] [concurrency (1-256, default 8)]");
    return 2;
}

AnsiConsole.MarkupLine($"[bold]ChannelPool demo[/]: {calls:N0} echo calls over TLS to a server on 127.0.0.1, {concurrency} at a time.");
AnsiConsole.MarkupLine("Each new channel costs a full TLS handshake. The server counts handshakes, so you can see who pays for them.");
AnsiConsole.WriteLine();

await using var server = LoopbackTlsServer.Start();
var factory = new TlsChannelFactory(server.EndPoint, server.Certificate);
var scenarios = new Scenarios(server, factory, concurrency);

// A short unreported pass first, so JIT and TLS library start-up costs land on no scenario in particular.
await scenarios.PerCallAsync(calls: 50, report: null);

var results = new List<ScenarioResult>();
await AnsiConsole.Status().StartAsync("Running", async status =>
{
    status.Status("Per-call channels: open, call, close, every time");
    results.Add(await scenarios.PerCallAsync(calls, "Per-call channel"));
    status.Status("Pooled, reuse: channels pre-opened in the background and reused");
    results.Add(await scenarios.PooledAsync(calls, LeaseMode.Reuse, "Pooled (reuse)"));
    status.Status("Pooled, single-use: pre-opened in the background, closed after one call");
    results.Add(await scenarios.PooledAsync(calls, LeaseMode.SingleUse, "Pooled (single-use)"));
    status.Status("Singleton: one channel shared by every caller");
    results.Add(await scenarios.SingletonAsync(calls, "Singleton channel"));
});

var singleton = results.Single(r => r.Name == "Singleton channel");
var table = new Table().Title("Results").AddColumns(
    "Scenario", "Calls/s", "p50 ms", "p99 ms", "Handshakes in warm-up", "Handshakes in run", "vs singleton");
foreach (var r in results)
{
    table.AddRow(
        r.Name,
        r.CallsPerSecond.ToString("N0", CultureInfo.InvariantCulture),
        r.P50.TotalMilliseconds.ToString("0.00", CultureInfo.InvariantCulture),
        r.P99.TotalMilliseconds.ToString("0.00", CultureInfo.InvariantCulture),
        r.HandshakesBeforeCalls.ToString(CultureInfo.InvariantCulture),
        r.HandshakesDuringCalls.ToString(CultureInfo.InvariantCulture),
        (r.CallsPerSecond / singleton.CallsPerSecond).ToString("0.00x", CultureInfo.InvariantCulture));
}

AnsiConsole.Write(table);
AnsiConsole.MarkupLine("A per-call channel pays a handshake inside every call.");
AnsiConsole.MarkupLine("A pool does its handshakes in warm-up; any in the run are refills on its low-priority background worker, off the callers' path.");
AnsiConsole.MarkupLine("A singleton is cheap too, but every caller queues on one channel, and when it faults the whole application stalls.");
return 0;

namespace ChannelPool.Demo
{
    /// <summary>The demo's two optional arguments, checked with clear messages.</summary>
    internal static class DemoArguments
    {
        public static bool TryParse(string[] args, out int calls, out int concurrency, out string error)
        {
            calls = 2000;
            concurrency = 8;
            error = string.Empty;
            if (args.Length > 2)
            {
                error = $"Expected at most two arguments, got {args.Length}.";
                return false;
            }

            if (args.Length > 0 && (!int.TryParse(args[0], NumberStyles.None, CultureInfo.InvariantCulture, out calls) || calls is < 1 or > 1_000_000))
            {
                error = $"calls must be a whole number from 1 to 1000000; got '{args[0]}'.";
                return false;
            }

            if (args.Length > 1 && (!int.TryParse(args[1], NumberStyles.None, CultureInfo.InvariantCulture, out concurrency) || concurrency is < 1 or > 256))
            {
                error = $"concurrency must be a whole number from 1 to 256; got '{args[1]}'.";
                return false;
            }

            return true;
        }
    }

    /// <summary>One scenario's figures.</summary>
    internal sealed record ScenarioResult(string Name, double CallsPerSecond, TimeSpan P50, TimeSpan P99, int HandshakesBeforeCalls, int HandshakesDuringCalls);

    /// <summary>The four ways to call the server, each measured the same way.</summary>
    internal sealed class Scenarios(LoopbackTlsServer server, TlsChannelFactory factory, int concurrency)
    {
        public Task<ScenarioResult> PerCallAsync(int calls, string? report) => MeasureAsync(report, calls, handshakesBefore: 0, async message =>
        {
            var channel = await factory.OpenAsync(CancellationToken.None);
            try
            {
                await channel.EchoAsync(message);
            }
            finally
            {
                await channel.CloseAsync();
            }
        });

        public async Task<ScenarioResult> PooledAsync(int calls, LeaseMode mode, string report)
        {
            // As many opens in flight as callers, as the per-call scenario has: single-use consumes a channel per call,
            // so its throughput is bound by how many handshakes run at once.
            var options = new ChannelPoolOptions
            {
                Name = report,
                PoolSize = Math.Min(concurrency * 2, 100),
                MaxConcurrentOpens = concurrency,
                LeaseMode = mode,
            };
            await using var pool = new DefaultChannelPool<TlsChannel>(factory, options);
            var before = server.Handshakes;
            await pool.WarmUpAsync();
            await server.WaitForHandshakesAsync(before + options.PoolSize);
            return await MeasureAsync(report, calls, server.Handshakes - before, async message =>
            {
                await using var lease = await pool.AcquireAsync();
                try
                {
                    await lease.Channel.EchoAsync(message);
                }
                catch
                {
                    lease.MarkBroken();
                    throw;
                }
            });
        }

        public async Task<ScenarioResult> SingletonAsync(int calls, string report)
        {
            var before = server.Handshakes;
            using var channel = await factory.OpenAsync(CancellationToken.None);
            await server.WaitForHandshakesAsync(before + 1);
            using var oneAtATime = new SemaphoreSlim(1);
            return await MeasureAsync(report, calls, server.Handshakes - before, async message =>
            {
                await oneAtATime.WaitAsync();
                try
                {
                    await channel.EchoAsync(message);
                }
                finally
                {
                    oneAtATime.Release();
                }
            });
        }

        private async Task<ScenarioResult> MeasureAsync(string? name, int calls, int handshakesBefore, Func<string, Task> call)
        {
            var latencies = new long[calls];
            var next = -1;
            var handshakesAtStart = server.Handshakes;
            var started = Stopwatch.GetTimestamp();
            var workers = Enumerable.Range(0, concurrency).Select(_ => Task.Run(async () =>
            {
                for (var i = Interlocked.Increment(ref next); i < calls; i = Interlocked.Increment(ref next))
                {
                    var callStarted = Stopwatch.GetTimestamp();
                    await call("ping " + i.ToString(CultureInfo.InvariantCulture));
                    latencies[i] = Stopwatch.GetTimestamp() - callStarted;
                }
            }));
            await Task.WhenAll(workers);
            var elapsed = Stopwatch.GetElapsedTime(started);

            Array.Sort(latencies);
            TimeSpan Percentile(double p) => Stopwatch.GetElapsedTime(0, latencies[Math.Min(calls - 1, (int)(p * calls))]);
            return new ScenarioResult(
                name ?? "warm-up",
                calls / elapsed.TotalSeconds,
                Percentile(0.50),
                Percentile(0.99),
                handshakesBefore,
                server.Handshakes - handshakesAtStart);
        }
    }
}
