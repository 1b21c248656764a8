using System.Diagnostics;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.Perf.Stats;
using ChannelPool.ServiceModel;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel.NetTcp;
using Spectre.Console;
using static ChannelPool.Perf.Reporting.ReportFormat;

namespace ChannelPool.Perf.Scenarios.Balancing;

/// <summary>What one balancing run measures (no options: the command runs as docs/performance.md names it).</summary>
internal sealed record BalancingSettings(int Callers, double CellSeconds, int ServiceMilliseconds, int SlowFactor, int PoolSize, double LifetimeSeconds, double EjectionSeconds);

/// <summary>One way of reaching three instances, one of them slow: its throughput, latency and the slow one's share.</summary>
internal sealed record BalancingCell(string Kind, long Calls, double Seconds, LatencySummary Latency, double SlowShare, long Failures)
{
    public double CallsPerSecond => Calls / Seconds;
}

/// <summary>A rolling restart of the three instances under load, and how long after it the calls spread evenly again (-1: not within two lifetimes).</summary>
internal sealed record RollingRestart(double LifetimeSeconds, double SecondsToEvenSpread, long Failures, long Calls);

internal sealed record BalancingResults(IReadOnlyList<BalancingCell> Cells, RollingRestart Restart);

/// <summary>
/// The <c>balancing</c> command (issue 41): three net.tcp TLS instances on loopback, one slowed by a factor, reached by a
/// pool over their three addresses (power of two choices, round robin) or through one address behind a round-robin TCP
/// proxy (a pooled channel stays on the instance its connection reached), against the two healthy instances alone;
/// then a rolling restart of all three under load, timed to an even spread again.
/// </summary>
internal sealed class BalancingScenario : PerfScenario<BalancingSettings, BalancingResults>
{
    private const string TwoHealthy = "two healthy instances alone";
    private const string PowerOfTwo = "three addresses, power of two choices";
    private const string RoundRobin = "three addresses, round robin";
    private const string Proxy = "one address behind a round-robin TCP proxy";

    public override string Name => "balancing";

    public override string Description =>
        "Issue 41: throughput and p99 with one slow instance of three, for power of two choices, round robin and one address behind a round-robin TCP proxy, " +
        "against the two healthy instances alone; then the time to an even spread after a rolling restart, against the channel lifetime.";

    public override bool UsesEmbeddedServers => false;

    protected override BalancingSettings Basis(bool quick) => quick ? new(8, 2, 5, 20, 8, 5, 1) : new(32, 15, 5, 20, 24, 30, 30);

    public override BalancingSettings? SuiteSettings(bool quick) => Basis(quick);

    public override async Task<BalancingResults> RunAsync(PerfContext context, BalancingSettings settings, CancellationToken cancellationToken)
    {
        using var certificate = TestCertificate.CreateEcdsa();
        var hosts = new NetTcpTestHost[3];
        for (var i = 0; i < hosts.Length; i++)
        {
            hosts[i] = await NetTcpTestHost.StartAsync(certificate, cancellationToken: cancellationToken);
            hosts[i].ServesAnyPort = true;
        }

        try
        {
            var cells = new List<BalancingCell>();
            cells.Add(await MeasureAsync(context, TwoHealthy, settings, hosts, certificate, cancellationToken));
            hosts[2].AddedServiceTime = TimeSpan.FromMilliseconds(settings.ServiceMilliseconds * (settings.SlowFactor - 1));
            foreach (var kind in new[] { PowerOfTwo, RoundRobin, Proxy })
            {
                cells.Add(await MeasureAsync(context, kind, settings, hosts, certificate, cancellationToken));
            }

            hosts[2].AddedServiceTime = TimeSpan.Zero;
            var restart = await RollingRestartAsync(context, settings, hosts, certificate, cancellationToken);
            return new BalancingResults(cells, restart);
        }
        finally
        {
            foreach (var host in hosts)
            {
                await host.StopAsync();
            }
        }
    }

    public override ReportSection Report(BalancingResults results, BalancingSettings settings, PerfContext context)
    {
        var section = NewSection("Several instances: balancing, a slow instance and a rolling restart", results);
        var baseline = results.Cells.Single(c => c.Kind == TwoHealthy).CallsPerSecond;
        section.Tables.Add(new ReportTable(
            "One slow instance of three",
            ["Reached as", "Calls/s", "vs two healthy alone", "p50 ms", "p99 ms", "Share to the slow instance", "Failed calls"],
            [.. results.Cells.Select(c => (IReadOnlyList<string>)[
                c.Kind, Num(c.CallsPerSecond, "N0"), Ratio(c.CallsPerSecond / baseline), Num(c.Latency.P50Ms, "N1"), Num(c.Latency.P99Ms, "N1"),
                c.Kind == TwoHealthy ? "—" : Percent(c.SlowShare), Num(c.Failures)])]));
        var p2c = results.Cells.Single(c => c.Kind == PowerOfTwo);
        section.Targets.Add(new TargetCheck(
            "Throughput with one slow instance ≥ 0.9× the two healthy instances alone (power of two choices)",
            Ratio(p2c.CallsPerSecond / baseline),
            p2c.CallsPerSecond >= 0.9 * baseline));
        var r = results.Restart;
        section.Tables.Add(new ReportTable(
            "Rolling restart of all three under load (power of two choices)",
            ["ChannelLifetime", "BaseEjectionTime", "Time to an even spread after the last restart", "Share of the lifetime", "Calls", "Failed calls"],
            [[$"{r.LifetimeSeconds:0.#} s", $"{settings.EjectionSeconds:0.#} s", r.SecondsToEvenSpread < 0 ? "not within two lifetimes" : $"{r.SecondsToEvenSpread:0.0} s", r.SecondsToEvenSpread < 0 ? "—" : Percent(r.SecondsToEvenSpread / r.LifetimeSeconds), Num(r.Calls), Num(r.Failures)]]));
        section.Targets.Add(new TargetCheck(
            "Even spread (each instance within 20% of a third) within one channel lifetime of the last restart",
            $"{r.SecondsToEvenSpread:0.0} s of {r.LifetimeSeconds:0.#} s",
            r.SecondsToEvenSpread >= 0 && r.SecondsToEvenSpread <= r.LifetimeSeconds));
        section.Notes.Add("A failed call in the restart is one that was out on a connection when its instance stopped: the pool repeats only calls that were never sent.");
        return section;
    }

    private static async Task<BalancingCell> MeasureAsync(
        PerfContext context, string kind, BalancingSettings settings, NetTcpTestHost[] hosts, System.Security.Cryptography.X509Certificates.X509Certificate2 certificate, CancellationToken cancellationToken)
    {
        await using var proxy = kind == Proxy ? new RoundRobinTcpProxy(hosts.Select(h => h.Port)) : null;
        var options = new ChannelPoolOptions { Name = "balancing", PoolSize = settings.PoolSize };
        var addresses = kind switch
        {
            TwoHealthy => hosts.Take(2).Select(h => h.EchoAddress),
            Proxy => [new Uri($"net.tcp://127.0.0.1:{proxy!.Port}/echo")],
            _ => hosts.Select(h => h.EchoAddress),
        };
        var balancing = new BalancingOptions { Policy = kind == RoundRobin ? BalancingPolicy.RoundRobin : BalancingPolicy.PowerOfTwoChoices };
        await using var pool = kind == Proxy
            ? new ServiceChannelPool<IEchoClient>(NetTcpTestHost.CreateBinding(), NetTcpTestHost.CreateAddress(addresses.Single()), options, f => TestCertificate.TrustOnly(f.Credentials, certificate))
            : new ServiceChannelPool<IEchoClient>(
                NetTcpTestHost.CreateBinding(), addresses.Select(NetTcpTestHost.CreateAddress), options, balancing, f => TestCertificate.TrustOnly(f.Credentials, certificate));
        await pool.WarmUpAsync(settings.PoolSize, cancellationToken);

        context.Console.WriteLine($"balancing: {kind}, {settings.Callers} callers, {settings.CellSeconds:0.#} s…");
        var before = hosts.Select(h => h.Counters.Calls).ToArray();
        var (calls, failures, latency, seconds) = await LoadAsync(pool, settings, TimeSpan.FromSeconds(settings.CellSeconds), cancellationToken);
        var served = hosts.Select((h, i) => h.Counters.Calls - before[i]).ToArray();
        return new BalancingCell(kind, calls, seconds, latency.Summarize(), served.Sum() == 0 ? 0 : (double)served[2] / served.Sum(), failures);
    }

    private static async Task<RollingRestart> RollingRestartAsync(
        PerfContext context, BalancingSettings settings, NetTcpTestHost[] hosts, System.Security.Cryptography.X509Certificates.X509Certificate2 certificate, CancellationToken cancellationToken)
    {
        var options = new ChannelPoolOptions { Name = "balancing-restart", PoolSize = settings.PoolSize, ChannelLifetime = TimeSpan.FromSeconds(settings.LifetimeSeconds) };
        await using var pool = new ServiceChannelPool<IEchoClient>(
            NetTcpTestHost.CreateBinding(), hosts.Select(h => NetTcpTestHost.CreateAddress(h.EchoAddress)), options, new BalancingOptions { BaseEjectionTime = TimeSpan.FromSeconds(settings.EjectionSeconds), OutlierInterval = TimeSpan.FromSeconds(Math.Min(10, settings.EjectionSeconds)) }, f => TestCertificate.TrustOnly(f.Credentials, certificate));
        await pool.WarmUpAsync(settings.PoolSize, cancellationToken);
        var balanced = pool.BalancedPool!;
        context.Console.WriteLine($"balancing: rolling restart of 3 instances under load, lifetime {settings.LifetimeSeconds:0.#} s…");

        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var load = LoadAsync(pool, settings, Timeout.InfiniteTimeSpan, stop.Token);
        for (var i = 0; i < hosts.Length; i++)
        {
            var port = hosts[i].Port;
            var index = i;
            await hosts[i].StopAsync();
            await WaitUntilAsync(() => balanced.GetEndpoints()[index].State != EndpointState.Active, TimeSpan.FromSeconds(30), cancellationToken);
            hosts[i] = await NetTcpTestHost.StartAsync(certificate, port, cancellationToken: cancellationToken);
            await WaitUntilAsync(() => balanced.GetEndpoints()[index].State == EndpointState.Active, TimeSpan.FromMinutes(2), cancellationToken);
        }

        // From the last restart: sample the instances' counts four times a second until the last second's calls are
        // within 20% of a third each.
        var restartedAt = Stopwatch.GetTimestamp();
        var samples = new List<long[]> { hosts.Select(h => h.Counters.Calls).ToArray() };
        var toEven = -1.0; // never, within two lifetimes
        while (Stopwatch.GetElapsedTime(restartedAt).TotalSeconds < settings.LifetimeSeconds * 2)
        {
            await Task.Delay(250, cancellationToken);
            samples.Add(hosts.Select(h => h.Counters.Calls).ToArray());
            if (samples.Count >= 5)
            {
                var window = samples[^1].Zip(samples[^5], (now, then) => now - then).ToArray();
                var even = window.Sum() / 3.0;
                if (even > 0 && window.All(c => Math.Abs(c - even) <= 0.2 * even))
                {
                    toEven = Stopwatch.GetElapsedTime(restartedAt).TotalSeconds;
                    break;
                }
            }
        }

        await stop.CancelAsync();
        var (calls, failures, _, _) = await load;
        return new RollingRestart(settings.LifetimeSeconds, toEven, failures, calls);
    }

    /// <summary>Callers making back-to-back calls, a proxy per call, for <paramref name="duration"/> or until stopped.</summary>
    private static async Task<(long Calls, long Failures, LatencyRecorder Latency, double Seconds)> LoadAsync(
        ServiceChannelPool<IEchoClient> pool, BalancingSettings settings, TimeSpan duration, CancellationToken cancellationToken)
    {
        var latency = new LatencyRecorder();
        long calls = 0, failures = 0;
        var started = Stopwatch.GetTimestamp();
        await Task.WhenAll(Enumerable.Range(0, settings.Callers).Select(_ => Task.Run(async () =>
        {
            while (!cancellationToken.IsCancellationRequested && (duration == Timeout.InfiniteTimeSpan || Stopwatch.GetElapsedTime(started) < duration))
            {
                var callStarted = Stopwatch.GetTimestamp();
                var client = new PooledEchoClient(pool);
                try
                {
                    await client.EchoAfterAsync("x", settings.ServiceMilliseconds);
                    client.Close();
                    latency.RecordSince(callStarted);
                    Interlocked.Increment(ref calls);
                }
                catch (Exception ex) when (ex is System.ServiceModel.CommunicationException or TimeoutException)
                {
                    client.Abort();
                    Interlocked.Increment(ref failures);
                }
            }
        }, CancellationToken.None)));
        return (calls, failures, latency, Stopwatch.GetElapsedTime(started).TotalSeconds);
    }

    private static async Task WaitUntilAsync(Func<bool> condition, TimeSpan limit, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        while (!condition())
        {
            if (Stopwatch.GetElapsedTime(started) > limit)
            {
                throw new TimeoutException($"The balancing scenario waited {limit.TotalSeconds:0} s for an instance to be ejected or let back in.");
            }

            await Task.Delay(50, cancellationToken);
        }
    }
}
