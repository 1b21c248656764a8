using System.Diagnostics;
using System.Globalization;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Stats;
using ChannelPool.Samples.Tls;
using Spectre.Console;

namespace ChannelPool.Perf.Scenarios;

/// <summary>The proxies scenario's settings.</summary>
internal sealed record ProxiesSettings
{
    /// <summary>Gets the calls per cell (the original: 20,000).</summary>
    public int Calls { get; init; } = 20_000;

    public IReadOnlyList<int> Concurrency { get; init; } = [1, 8, 32];
}

/// <summary>One cell: a kind of proxy, at one concurrency.</summary>
internal sealed record ProxiesResult(
    string Binding, string Kind, int Concurrency, int Calls, double Seconds, double CallsPerSecond, LatencySummary Latency, double AllocatedBytesPerCall,
    long HandshakesBeforeCalls, long HandshakesDuringCalls);

/// <summary>
/// Per-call, pooled single-use, pooled reuse and singleton channels, on the same calls at concurrency 1, 8 and 32,
/// against the TLS echo server: the net.tcp-with-TLS stand-in, where every channel open is a full TLS handshake. The
/// WCF bindings (wsHttp with secure conversation, net.tcp, basicHttps) need the WCF packages, which this machine's
/// package source does not have (issue 3); they join this table when those restore.
/// </summary>
internal sealed class ProxiesScenario(PerfContext context, ProxiesSettings settings, TlsChannelFactory factory, string binding)
{
    public const string PerCall = "per-call";
    public const string PooledSingleUse = "pooled single-use";
    public const string PooledReuse = "pooled reuse";
    public const string Singleton = "singleton";

    public async Task<IReadOnlyList<ProxiesResult>> RunAsync(CancellationToken cancellationToken)
    {
        // An unreported pass first, so JIT and TLS start-up costs land on no kind in particular.
        await MeasureAsync("warm-up", 2, Math.Min(200, settings.Calls), 0, PerCallAsync, cancellationToken);

        var results = new List<ProxiesResult>();
        foreach (var concurrency in settings.Concurrency)
        {
            results.Add(await RunKindAsync(PerCall, concurrency, cancellationToken));
            results.Add(await RunKindAsync(PooledSingleUse, concurrency, cancellationToken));
            results.Add(await RunKindAsync(PooledReuse, concurrency, cancellationToken));
            results.Add(await RunKindAsync(Singleton, concurrency, cancellationToken));
        }

        return results;
    }

    public static ReportSection Describe(IReadOnlyList<ProxiesResult> results, ProxiesSettings settings, bool serverStatsKnown)
    {
        var binding = results.Count > 0 ? results[0].Binding : "tls";
        var section = new ReportSection(
            "proxies",
            "Proxies: per-call, pooled and singleton channels",
            $"{settings.Calls:N0} echo calls per cell on `{binding}`, where every new channel costs a full TLS handshake (no resumption). Per-call opens, calls and closes a channel " +
            "every time; pooled channels are pre-opened by the pool's background worker (library defaults: 50 idle, refill at 25, 4 opens at a time) and either closed after " +
            "one lease (single-use, the original's semantics) or reused; the singleton is one channel every caller queues for. The WCF bindings of the issue are not here: " +
            "the WCF packages do not restore on this machine (issue 3).")
        {
            Results = results,
        };
        section.Tables.Add(new ReportTable(
            "Figures",
            ["Concurrency", "Kind", "Calls/s", "p50 ms", "p95 ms", "p99 ms", "Bytes/call", "Handshakes (warm-up)", "Handshakes (calls)"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                Num(r.Concurrency), r.Kind, Num(r.CallsPerSecond), Num(r.Latency.P50Ms, "0.000"), Num(r.Latency.P95Ms, "0.000"), Num(r.Latency.P99Ms, "0.000"),
                Num(r.AllocatedBytesPerCall), serverStatsKnown ? Num(r.HandshakesBeforeCalls) : "—", serverStatsKnown ? Num(r.HandshakesDuringCalls) : "—"])]));
        section.Tables.Add(new ReportTable(
            "Ratio to the singleton (throughput: higher is better; latency and bytes: lower is better)",
            ["Concurrency", "Kind", "Calls/s", "p50", "p95", "p99", "Bytes/call"],
            [.. results.Select(r =>
            {
                var s = results.Single(x => x.Concurrency == r.Concurrency && x.Kind == Singleton);
                return (IReadOnlyList<string>)[
                    Num(r.Concurrency), r.Kind, Ratio(r.CallsPerSecond, s.CallsPerSecond), Ratio(r.Latency.P50Ms, s.Latency.P50Ms), Ratio(r.Latency.P95Ms, s.Latency.P95Ms),
                    Ratio(r.Latency.P99Ms, s.Latency.P99Ms), Ratio(r.AllocatedBytesPerCall, s.AllocatedBytesPerCall)];
            })]));
        section.Charts.Add(new Chart(
            "proxies-throughput",
            $"Proxies on {binding}: calls per second",
            ChartKind.GroupedBar,
            "Concurrency",
            "Calls per second",
            [.. results.Select(r => new ChartPoint(r.Kind, $"concurrency {r.Concurrency}", r.Concurrency, r.CallsPerSecond))],
            LogScaleY: true));
        section.Charts.Add(new Chart(
            "proxies-p99",
            $"Proxies on {binding}: p99 latency",
            ChartKind.GroupedBar,
            "Concurrency",
            "p99 latency (ms)",
            [.. results.Select(r => new ChartPoint(r.Kind, $"concurrency {r.Concurrency}", r.Concurrency, Math.Max(r.Latency.P99Ms, 0.001)))],
            LogScaleY: true));

        foreach (var concurrency in results.Select(r => r.Concurrency).Distinct())
        {
            var cell = results.Where(r => r.Concurrency == concurrency).ToDictionary(r => r.Kind);
            var reuseVsSingleton = cell[PooledReuse].CallsPerSecond / cell[Singleton].CallsPerSecond;
            var reuseVsPerCall = cell[PooledReuse].CallsPerSecond / cell[PerCall].CallsPerSecond;
            var singleUseVsPerCall = cell[PooledSingleUse].CallsPerSecond / cell[PerCall].CallsPerSecond;
            var where = $"{binding} stand-in for wsHttp, concurrency {concurrency}";
            section.Targets.Add(Check($"Pooled reuse ≥ 0.95× singleton throughput ({where})", reuseVsSingleton, 0.95));
            section.Targets.Add(Check($"Pooled reuse ≥ 3× per-call throughput ({where})", reuseVsPerCall, 3));
            section.Targets.Add(Check($"Pooled single-use > 1.36× per-call, the original's figure ({where})", singleUseVsPerCall, 1.36));
        }

        section.Notes.Add("Bytes/call is what the client process allocated per call, the pool's background opens included; the server runs in its own process and is not counted.");
        return section;
    }

    private static TargetCheck Check(string target, double ratio, double goal) =>
        new(target, ratio.ToString("0.00×", CultureInfo.InvariantCulture), ratio >= goal, ratio >= goal ? null : $"{(goal - ratio) / goal:P0} below {goal:0.##}×");

    private async Task<ProxiesResult> RunKindAsync(string kind, int concurrency, CancellationToken cancellationToken)
    {
        var label = $"proxies: {kind}, concurrency {concurrency}";
        ProxiesResult result = null!;
        await context.Console.Status().StartAsync(Markup.Escape(label), async status =>
        {
            var before = await context.Server.GetStatsAsync(cancellationToken);
            switch (kind)
            {
                case PerCall:
                    result = await MeasureAsync(kind, concurrency, settings.Calls, 0, PerCallAsync, cancellationToken);
                    break;
                case Singleton:
                {
                    var channel = await factory.OpenAsync(cancellationToken);
                    try
                    {
                        using var oneAtATime = new SemaphoreSlim(1, 1);
                        var warm = await context.Server.GetStatsAsync(cancellationToken);
                        result = await MeasureAsync(kind, concurrency, settings.Calls, warm.TlsHandshakes - before.TlsHandshakes, async (message, token) =>
                        {
                            await oneAtATime.WaitAsync(token);
                            try
                            {
                                await channel.EchoAsync(message, token);
                            }
                            finally
                            {
                                oneAtATime.Release();
                            }
                        }, cancellationToken);
                    }
                    finally
                    {
                        await channel.CloseAsync(cancellationToken);
                    }

                    break;
                }

                default:
                {
                    // Library defaults, as an application that swapped its proxy base class would run.
                    var options = new ChannelPoolOptions
                    {
                        Name = $"perf-{kind.Replace(' ', '-')}-{concurrency}",
                        LeaseMode = kind == PooledReuse ? LeaseMode.Reuse : LeaseMode.SingleUse,
                    };
                    await using var pool = new ChannelPool<TlsChannel>(factory, options);
                    status.Status(Markup.Escape($"{label}: warming up {options.PoolSize} channels"));
                    await pool.WarmUpAsync(cancellationToken);
                    var warm = await context.Server.GetStatsAsync(cancellationToken);
                    status.Status(Markup.Escape(label));
                    result = await MeasureAsync(kind, concurrency, settings.Calls, warm.TlsHandshakes - before.TlsHandshakes, async (message, token) =>
                    {
                        await using var lease = await pool.AcquireAsync(token);
                        try
                        {
                            await lease.Channel.EchoAsync(message, token);
                        }
                        catch
                        {
                            lease.MarkBroken();
                            throw;
                        }
                    }, cancellationToken);
                    break;
                }
            }
        });

        context.Console.MarkupLine(
            $"  {Markup.Escape(label)}: {result.CallsPerSecond:N0} calls/s, p50 {result.Latency.P50Ms:0.000} ms, p99 {result.Latency.P99Ms:0.000} ms, {result.AllocatedBytesPerCall:N0} B/call");
        return result;
    }

    private async Task PerCallAsync(string message, CancellationToken cancellationToken)
    {
        var channel = await factory.OpenAsync(cancellationToken);
        try
        {
            await channel.EchoAsync(message, cancellationToken);
        }
        finally
        {
            await channel.CloseAsync(cancellationToken);
        }
    }

    private async Task<ProxiesResult> MeasureAsync(
        string kind, int concurrency, int calls, long handshakesBefore, Func<string, CancellationToken, Task> call, CancellationToken cancellationToken)
    {
        var latency = new LatencyRecorder();
        var next = -1;
        var statsBefore = await context.Server.GetStatsAsync(cancellationToken);
        var allocatedBefore = GC.GetTotalAllocatedBytes(precise: true);
        var started = Stopwatch.GetTimestamp();
        var workers = Enumerable.Range(0, concurrency).Select(_ => Task.Run(
            async () =>
            {
                for (var i = Interlocked.Increment(ref next); i < calls; i = Interlocked.Increment(ref next))
                {
                    var callStarted = Stopwatch.GetTimestamp();
                    await call("ping " + i.ToString(CultureInfo.InvariantCulture), cancellationToken);
                    latency.RecordSince(callStarted);
                }
            },
            cancellationToken));
        await Task.WhenAll(workers);
        var seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
        var allocated = GC.GetTotalAllocatedBytes(precise: true) - allocatedBefore;
        var statsAfter = await context.Server.GetStatsAsync(cancellationToken);
        return new ProxiesResult(
            binding, kind, concurrency, calls, seconds, calls / seconds, latency.Summarize(), (double)allocated / calls,
            handshakesBefore, statsAfter.IsKnown ? statsAfter.TlsHandshakes - statsBefore.TlsHandshakes : -1);
    }

    private static string Num(double value, string format = "N0") => value.ToString(format, CultureInfo.InvariantCulture);

    private static string Ratio(double value, double singleton) =>
        singleton > 0 ? (value / singleton).ToString("0.00×", CultureInfo.InvariantCulture) : "—";
}
