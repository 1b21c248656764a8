using System.CommandLine;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Reporting;
using ChannelPool.ServiceModel;
using ChannelPool.Testing.ServiceModel;
using Spectre.Console;
using static ChannelPool.Perf.Reporting.ReportFormat;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.OrdinaryUse;

/// <summary>What one one-caller run measures.</summary>
internal sealed record OneCallerSettings(string Binding, double LifetimeSeconds, double DurationSeconds, int PoolSize);

/// <summary>What it measured, after the pool's first fill.</summary>
/// <param name="AwaitedOpens">Leases that waited for an open (the pool's <c>channelpool.channel.awaited_opens</c>).</param>
/// <param name="Opens">Channel opens (one <c>channelpool.channel.create_time</c> measurement each).</param>
/// <param name="MostOpensInOneSecond">The most opens that finished within any one second of the run.</param>
internal sealed record OneCallerResult(string Binding, double Seconds, long Calls, long AwaitedOpens, long Opens, int MostOpensInOneSecond)
{
    public double AwaitedOpensPerHour => AwaitedOpens * 3600 / Seconds;
}

/// <summary>
/// The <c>one-caller</c> command (issue 36): one caller making back-to-back calls on a warm pool for several channel
/// lifetimes. At light load no lease should wait for an open, and channels opened together should not expire, and
/// reopen, together.
/// </summary>
internal sealed class OneCallerScenario : PerfScenario<OneCallerSettings, OneCallerResult>
{
    public OneCallerScenario()
    {
        Options.Add(PositiveDouble("--lifetime", "ChannelLifetime, in seconds.", 90), (s, v) => s with { LifetimeSeconds = v });
        Options.Add(PositiveDouble("--duration", "How long the caller calls, in seconds (ten 90 s lifetimes by default).", 900), (s, v) => s with { DurationSeconds = v });
    }

    public override string Name => "one-caller";

    public override string Description =>
        "Issue 36: one caller's back-to-back calls on a warm pool over many channel lifetimes (90 s by default): awaited opens per hour, opens per lifetime, " +
        "and the most opens in one second as a share of the pool.";

    protected override OneCallerSettings Basis(bool quick) => quick ? new(WcfBinding.NetTcp, 2, 6, 8) : new(WcfBinding.NetTcp, 90, 900, ChannelPoolOptions.DefaultPoolSize);

    public override async Task<OneCallerResult> RunAsync(PerfContext context, OneCallerSettings settings, CancellationToken cancellationToken)
    {
        var endpoints = context.Server.Endpoints.Wcf
            ?? throw new InvalidOperationException("The one-caller scenario needs the WCF test services; run it against the embedded servers.");
        var binding = new WcfBinding(settings.Binding, ServiceConcurrency.Multiple, endpoints);
        var options = new ChannelPoolOptions { Name = "one-caller", PoolSize = settings.PoolSize, ChannelLifetime = TimeSpan.FromSeconds(settings.LifetimeSeconds) };
        await using var pool = new ServiceChannelPool<IEchoClient>(binding.CreateBinding(), binding.Address, options, f => binding.Configure(f.Credentials));
        await pool.WarmUpAsync(settings.PoolSize, cancellationToken);

        using var meters = new PoolMeters(options.Name);
        context.Console.WriteLine($"one-caller: {binding.Description}, lifetime {settings.LifetimeSeconds:0.#} s, {settings.DurationSeconds:N0} s of calls…");
        var calls = 0L;
        var started = Stopwatch.GetTimestamp();
        var duration = TimeSpan.FromSeconds(settings.DurationSeconds);
        while (Stopwatch.GetElapsedTime(started) < duration)
        {
            var client = new PooledEchoClient(pool);
            await client.OpenAsync(cancellationToken);
            await client.EchoAsync("x");
            await client.CloseAsync();
            calls++;
        }

        var seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
        return new OneCallerResult(binding.Description, seconds, calls, meters.AwaitedOpens, meters.Opens, meters.MostOpensInOneSecond());
    }

    public override ReportSection Report(OneCallerResult result, OneCallerSettings settings, PerfContext context)
    {
        var lifetimes = result.Seconds / settings.LifetimeSeconds;
        var section = NewSection("One caller over many lifetimes: awaited opens and synchronized reopening", result);
        section.Tables.Add(new ReportTable(
            $"One caller, lifetime {settings.LifetimeSeconds:0.#} s, {lifetimes:0.#} lifetimes",
            ["Binding", "Calls", "Awaited opens", "Awaited opens per hour", "Opens", "Opens per lifetime", "Most opens in one second (share of PoolSize)"],
            [[
                result.Binding, Num(result.Calls), Num(result.AwaitedOpens), Num(result.AwaitedOpensPerHour, "N1"), Num(result.Opens),
                Num(result.Opens / lifetimes, "N1"), $"{result.MostOpensInOneSecond:N0} ({Percent((double)result.MostOpensInOneSecond / settings.PoolSize)})",
            ]]));
        return section;
    }

    /// <summary>Listens to one pool's opens (with the second each happened) and awaited opens.</summary>
    private sealed class PoolMeters : IDisposable
    {
        private readonly MeterListener _listener = new();
        private readonly List<long> _openTimestamps = [];
        private long _awaitedOpens;

        public PoolMeters(string poolName)
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == ChannelPoolTelemetry.MeterName && instrument.Name is "channelpool.channel.create_time" or "channelpool.channel.awaited_opens")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<double>((_, _, tags, _) =>
            {
                if (IsPool(tags, poolName))
                {
                    lock (_openTimestamps)
                    {
                        _openTimestamps.Add(Stopwatch.GetTimestamp());
                    }
                }
            });
            _listener.SetMeasurementEventCallback<long>((_, leases, tags, _) =>
            {
                if (IsPool(tags, poolName))
                {
                    Interlocked.Add(ref _awaitedOpens, leases);
                }
            });
            _listener.Start();
        }

        public long AwaitedOpens => Interlocked.Read(ref _awaitedOpens);

        public long Opens
        {
            get
            {
                lock (_openTimestamps)
                {
                    return _openTimestamps.Count;
                }
            }
        }

        /// <summary>The most opens recorded within any one second (a sliding window).</summary>
        public int MostOpensInOneSecond()
        {
            lock (_openTimestamps)
            {
                var most = 0;
                for (int first = 0, last = 0; last < _openTimestamps.Count; last++)
                {
                    while (_openTimestamps[last] - _openTimestamps[first] >= Stopwatch.Frequency)
                    {
                        first++;
                    }

                    most = Math.Max(most, last - first + 1);
                }

                return most;
            }
        }

        public void Dispose() => _listener.Dispose();

        private static bool IsPool(ReadOnlySpan<KeyValuePair<string, object?>> tags, string poolName)
        {
            foreach (var tag in tags)
            {
                if (tag.Key == ChannelPoolTelemetry.PoolNameTag)
                {
                    return tag.Value is string name && name.StartsWith(poolName, StringComparison.Ordinal);
                }
            }

            return false;
        }
    }
}
