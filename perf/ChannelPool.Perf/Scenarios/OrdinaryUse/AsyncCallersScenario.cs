using System.Collections.Concurrent;
using System.CommandLine;
using System.Diagnostics;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ServiceReference;
using ChannelPool.ServiceModel;
using Spectre.Console;
using ServiceConcurrency = ChannelPool.Testing.ServiceModel.ServiceConcurrency;
using TestContract = ChannelPool.Testing.ServiceModel.TestContract;
using static ChannelPool.Perf.Reporting.ReportFormat;

namespace ChannelPool.Perf.Scenarios.OrdinaryUse;

/// <summary>What one async-callers run measures.</summary>
/// <param name="ServiceTimeMs">How long the service spends on each call (EchoAfter), waiting, not computing.</param>
/// <param name="Variants">The proxies to compare, by command-line name.</param>
internal sealed record AsyncCallersSettings(int Calls, int Callers, int ServiceTimeMs, int MaxChannels, IReadOnlyList<string> Variants);

/// <summary>One variant's run.</summary>
/// <param name="Errors">Failed calls by exception type.</param>
/// <param name="ThreadsAtStart">Thread-pool threads when the variant started (a variant before it may have grown the pool).</param>
/// <param name="MaxThreads">The most thread-pool threads seen while it ran (<see cref="ThreadPool.ThreadCount"/>, sampled every 10 ms).</param>
/// <param name="Handshakes">TLS handshakes the server counted: one per new HTTPS connection.</param>
internal sealed record AsyncCallersResult(
    string Variant, double Seconds, long Calls, IReadOnlyDictionary<string, int> Errors, int ThreadsAtStart, int MaxThreads, long Handshakes)
{
    public double CallsPerSecond => Calls / Seconds;
}

/// <summary>
/// The <c>async-callers</c> command (issue 36): many tasks calling a slow service operation through <c>Task</c>
/// operations, written as an app writes a generated client's calls (new, await the call, await <c>CloseAsync</c>, no
/// <c>try</c>/<c>finally</c>), with more callers than <c>MaxChannels</c>. It shows whether a proxy's async path blocks
/// threads while it waits for a channel: blocked callers grow the thread pool and time out.
/// </summary>
internal sealed class AsyncCallersScenario : PerfScenario<AsyncCallersSettings, IReadOnlyList<AsyncCallersResult>>
{
    private const string Twin = "twin";
    private const string Generated = "generated";
    private const string HandWritten = "hand-written";
    private const string TwinOpenAsync = "twin-openasync";

    private static readonly Dictionary<string, string> Described = new()
    {
        [Twin] = "pooled twin as generated (Task operations, no OpenAsync)",
        [Generated] = "dotnet-svcutil client, no pool (a new client per call)",
        [HandWritten] = "hand-written PooledClientBase<T> proxy (=> Channel.XAsync)",
        [TwinOpenAsync] = "pooled twin, await OpenAsync() first",
    };

    // Those that cannot block run first, so a thread pool a blocking variant grew does not carry into them.
    private static readonly string[] RunOrder = [TwinOpenAsync, Generated, HandWritten, Twin];

    public override string Name => "async-callers";

    public override string Description =>
        "Issue 36: 1,000 calls of a 200 ms operation from 300 tasks, MaxChannels 126, over BasicHttps: the pooled twin as generated, the plain generated client, " +
        "a hand-written pooled proxy and the twin with OpenAsync first, side by side: time, errors, thread-pool threads.";

    protected override AsyncCallersSettings Basis(bool quick) =>
        quick ? new(60, 20, 20, 8, [.. Described.Keys]) : new(1000, 300, 200, ChannelPoolOptions.DefaultMaxChannels, [.. Described.Keys]);

    public override async Task<IReadOnlyList<AsyncCallersResult>> RunAsync(PerfContext context, AsyncCallersSettings settings, CancellationToken cancellationToken)
    {
        var endpoints = context.Server.Endpoints.Wcf
            ?? throw new InvalidOperationException("The async-callers scenario needs the WCF test services; run it against the embedded servers.");
        var binding = new WcfBinding(WcfBinding.BasicHttps, ServiceConcurrency.Multiple, endpoints);
        EchoServiceClient.TrustedCertificate = endpoints.LoadCertificate();
        // An unreported call of each first, so JIT and WCF's start-up costs land on no variant in particular.
        foreach (var variant in RunOrder.Where(settings.Variants.Contains))
        {
            await RunVariantAsync(variant, binding, settings with { Calls = 2, Callers = 1 }, cancellationToken);
        }

        var baseline = ThreadPool.ThreadCount;
        var results = new List<AsyncCallersResult>();
        foreach (var variant in RunOrder.Where(settings.Variants.Contains))
        {
            await SettleThreadPoolAsync(baseline, cancellationToken);
            context.Console.WriteLine($"async-callers: {Described[variant]}, {settings.Calls:N0} calls from {settings.Callers:N0} tasks…");
            var before = binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken));
            var result = await RunVariantAsync(variant, binding, settings, cancellationToken);
            var handshakes = (binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken)) - before).TlsHandshakes;
            results.Add(result with { Handshakes = handshakes });
        }

        return [.. results.OrderBy(r => Array.IndexOf([.. Described.Keys], r.Variant))];
    }

    /// <summary>
    /// Waits, up to a minute, for the threads a blocking variant made the pool inject to retire (idle workers leave
    /// after about 20 s), so the next variant starts with the threads an app would have, not with hundreds.
    /// </summary>
    private static async Task SettleThreadPoolAsync(int baseline, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        while (ThreadPool.ThreadCount > baseline + 4 && Stopwatch.GetElapsedTime(started) < TimeSpan.FromMinutes(1))
        {
            await Task.Delay(500, cancellationToken);
        }
    }

    private static async Task<AsyncCallersResult> RunVariantAsync(string variant, WcfBinding binding, AsyncCallersSettings settings, CancellationToken cancellationToken)
    {
        // A short drain: a call that failed without CloseAsync left its lease, and draining waits for it.
        var options = new ChannelPoolOptions
        {
            Name = $"async-callers-{variant}",
            MaxChannels = settings.MaxChannels,
            PoolSize = Math.Min(ChannelPoolOptions.DefaultPoolSize, settings.MaxChannels),
            DrainTimeout = TimeSpan.FromSeconds(1),
        };
        await using var twinPool = new ServiceChannelPool<IEchoService>(binding.CreateBinding(), binding.Address, options, f => binding.Configure(f.Credentials));
        await using var handWrittenPool = new ServiceChannelPool<IEchoClient>(binding.CreateBinding(), binding.Address, options, f => binding.Configure(f.Credentials));
        var ms = settings.ServiceTimeMs;
        Func<Task> call = variant switch
        {
            Twin => async () =>
            {
                var client = new PooledEchoServiceClient(twinPool);
                await client.EchoAfterAsync("x", ms);
                await client.CloseAsync();
            },
            TwinOpenAsync => async () =>
            {
                var client = new PooledEchoServiceClient(twinPool);
                await client.OpenAsync();
                await client.EchoAfterAsync("x", ms);
                await client.CloseAsync();
            },
            HandWritten => async () =>
            {
                var client = new PooledEchoClient(handWrittenPool);
                await client.EchoAfterAsync("x", ms);
                await client.CloseAsync();
            },
            _ => async () =>
            {
                var client = new EchoServiceClient(EchoServiceClient.EndpointConfiguration.BasicHttpsBinding_IEchoService, binding.Address);
                await client.EchoAfterAsync("x", ms);
                await client.CloseAsync();
            },
        };

        // As ChannelPoolFactory.Initialize does: the pool starts filling, and the first callers do not wait for it.
        _ = variant == Generated ? Task.CompletedTask : variant == HandWritten ? handWrittenPool.WarmUpAsync(0, cancellationToken) : twinPool.WarmUpAsync(0, cancellationToken);

        var errors = new ConcurrentDictionary<string, int>();
        long remaining = settings.Calls, succeeded = 0;
        using var threads = new ThreadSampler();
        var started = Stopwatch.GetTimestamp();
        await Task.WhenAll(Enumerable.Range(0, settings.Callers).Select(_ => Task.Run(
            async () =>
            {
                while (Interlocked.Decrement(ref remaining) >= 0 && !cancellationToken.IsCancellationRequested)
                {
                    try
                    {
                        await call();
                        Interlocked.Increment(ref succeeded);
                    }
                    catch (Exception ex)
                    {
                        errors.AddOrUpdate(ex.GetType().Name, 1, (_, n) => n + 1);
                    }
                }
            },
            cancellationToken)));
        var seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
        return new AsyncCallersResult(variant, seconds, succeeded, new SortedDictionary<string, int>(errors, StringComparer.Ordinal), threads.AtStart, threads.Max, 0);
    }

    public override ReportSection Report(IReadOnlyList<AsyncCallersResult> results, AsyncCallersSettings settings, PerfContext context)
    {
        var section = NewSection("Async callers: blocked threads under more callers than MaxChannels", results);
        section.Tables.Add(new ReportTable(
            $"{settings.Calls:N0} calls of a {settings.ServiceTimeMs:N0} ms operation from {settings.Callers:N0} tasks",
            ["Variant", "Time (s)", "Calls/s", "Calls ok", "Errors", "Thread-pool threads (start → max)", "TLS handshakes"],
            [.. results.Select(r => (IReadOnlyList<string>)[
                Described[r.Variant], Num(r.Seconds, "0.0"), Num(r.CallsPerSecond), Num(r.Calls),
                r.Errors.Count == 0 ? "0" : string.Join(", ", r.Errors.Select(e => $"{e.Value:N0} {e.Key}")),
                $"{r.ThreadsAtStart:N0} → {r.MaxThreads:N0}", Num(r.Handshakes)])]));
        return section;
    }

    /// <summary>Samples <see cref="ThreadPool.ThreadCount"/> on a thread of its own, which a starved thread pool cannot delay.</summary>
    private sealed class ThreadSampler : IDisposable
    {
        private readonly ManualResetEventSlim _stop = new();
        private readonly Thread _thread;
        private int _max;

        public ThreadSampler()
        {
            AtStart = _max = ThreadPool.ThreadCount;
            _thread = new Thread(() =>
            {
                do
                {
                    _max = Math.Max(_max, ThreadPool.ThreadCount);
                }
                while (!_stop.Wait(10));
            })
            { IsBackground = true, Name = "thread-pool sampler" };
            _thread.Start();
        }

        public int AtStart { get; }

        public int Max => Math.Max(Volatile.Read(ref _max), ThreadPool.ThreadCount);

        public void Dispose()
        {
            _stop.Set();
            _thread.Join();
            _stop.Dispose();
        }
    }
}
