using System.Diagnostics;
using System.Diagnostics.Metrics;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Servers;
using ChannelPool.Perf.Stats;
using ChannelPool.ServiceModel;
using ChannelPool.Testing.ServiceModel;
using Spectre.Console;

namespace ChannelPool.Perf.Scenarios.Headroom;

/// <summary>
/// Runs the load that steps from one caller up to the peak, down to one and back, through pooled WCF proxies on real
/// bindings: once over a pool with the original's fixed 50 idle channels and once over an adaptive one, taking turns.
/// The pool's own instruments say which leases waited for an open and how long callers waited; the test services
/// count the handshakes; a sampler keeps the pool's counts every 100 ms.
/// </summary>
internal sealed class HeadroomRun(PerfContext context, HeadroomSettings settings)
{
    public const string Fixed = "fixed 50";
    public const string Adaptive = "adaptive";

    /// <summary>The two pools, the fixed one first in the report.</summary>
    public static readonly string[] Pools = [Fixed, Adaptive];

    private static readonly TimeSpan SampleEvery = TimeSpan.FromMilliseconds(100);

    public async Task<IReadOnlyList<HeadroomResult>> RunAsync(CancellationToken cancellationToken)
    {
        var endpoints = context.Server.Endpoints.Wcf
            ?? throw new InvalidOperationException("The headroom scenario needs the WCF test services; run it against the embedded servers.");
        var plan = Plan();
        var results = new List<HeadroomResult>();
        var turn = 0;
        foreach (var name in settings.Bindings)
        {
            // One lease per channel, so how the service serves one session's calls does not matter here; WCF's default it is.
            var binding = new WcfBinding(name, ServiceConcurrency.Single, endpoints);
            await WarmUpAsync(binding, cancellationToken);
            var tallies = Pools.ToDictionary(pool => pool, _ => new Tally(plan));
            for (var round = 0; round < settings.Rounds; round++)
            {
                foreach (var pool in turn++ % 2 == 0 ? Pools : Pools.Reverse())
                {
                    await RunOnceAsync(binding, pool, plan, tallies[pool], round, cancellationToken);
                }
            }

            foreach (var pool in Pools)
            {
                var result = tallies[pool].ToResult(binding.Description, pool);
                results.Add(result);
                context.Console.MarkupLine(Markup.Escape(
                    $"  {binding.Description}, {pool}: {result.AfterFirstStep.Sum(p => p.AwaitedOpens):N0} lease(s) waited for an open after the first step, " +
                    $"{result.Jump.AwaitedOpens:N0} on the jump; at the low step {result.Quiet.MeanIdle:0.#} idle, " +
                    $"{HandshakesPerMinute(binding, result.Quiet):N0} handshakes/min; at the peak {result.PeakStep.CallsPerSecond:N0} calls/s"));
            }
        }

        return results;
    }

    /// <summary>The handshake that opening a channel costs on <paramref name="binding"/>, per minute of <paramref name="phase"/>.</summary>
    /// <remarks>On net.tcp every channel is a TLS connection; on WSHttp channels share the factory's HTTPS connections, and each negotiates a security context.</remarks>
    public static double HandshakesPerMinute(WcfBinding binding, HeadroomPhase phase) => HandshakesPerMinute(binding.Name == WcfBinding.NetTcp, phase);

    public static double HandshakesPerMinute(bool netTcp, HeadroomPhase phase) =>
        phase.Seconds > 0 ? (netTcp ? phase.Server.TlsHandshakes : phase.Server.Negotiations) * 60 / phase.Seconds : 0;

    private List<(string Name, HeadroomPhaseKind Kind, int Callers, TimeSpan Duration)> Plan() =>
    [
        .. settings.Ramp.Select(callers => ($"ramp {callers}", HeadroomPhaseKind.Ramp, callers, settings.StepTime)),
        ("low step, settling", HeadroomPhaseKind.Settling, 1, settings.LowStepTime - settings.QuietTime),
        ("low step, quiet", HeadroomPhaseKind.Quiet, 1, settings.QuietTime),
        ($"jump to {settings.Peak}", HeadroomPhaseKind.Jump, settings.Peak, settings.JumpTime),
    ];

    private ChannelPoolOptions Options(WcfBinding binding, string pool, string run) => new()
    {
        Name = $"headroom-{binding.Name}-{pool.Replace(' ', '-')}-{run}",
        ChannelLifetime = settings.ChannelLifetime,
        LifetimeJitter = settings.LifetimeJitter,
        IdleTarget = { Mode = pool == Adaptive ? IdleTargetMode.Adaptive : IdleTargetMode.Fixed },
    };

    /// <summary>An unreported pass at a few callers, so the JIT has tiered the call path up before either pool is measured.</summary>
    private async Task WarmUpAsync(WcfBinding binding, CancellationToken cancellationToken)
    {
        await context.Console.Status().StartAsync(Markup.Escape($"headroom: {binding.Description}, warm-up"), async _ =>
        {
            await using var pool = new ServiceChannelPool<IEchoClient>(
                binding.CreateBinding(), binding.Address, Options(binding, Fixed, "warm-up"), factory => binding.Configure(factory.Credentials));
            await pool.WarmUpAsync(pool.PoolSize, cancellationToken);
            var load = new CallerLoad(pool, cancellationToken);
            await load.SetCallersAsync(8);
            await Task.Delay(settings.StepTime, cancellationToken);
            await load.SetCallersAsync(0);
        });
    }

    private async Task RunOnceAsync(
        WcfBinding binding,
        string poolKind,
        List<(string Name, HeadroomPhaseKind Kind, int Callers, TimeSpan Duration)> plan,
        Tally tally,
        int round,
        CancellationToken cancellationToken)
    {
        var label = $"headroom: {binding.Description}, {poolKind} (round {round + 1} of {settings.Rounds})";
        await context.Console.Status().StartAsync(Markup.Escape(label), async status =>
        {
            var options = Options(binding, poolKind, $"round{round + 1}");
            await using var pool = new ServiceChannelPool<IEchoClient>(binding.CreateBinding(), binding.Address, options, factory => binding.Configure(factory.Credentials));
            using var instruments = new PoolInstruments(options.Name!, tally);
            await pool.WarmUpAsync(pool.PoolSize, cancellationToken);
            await context.Server.SettleAsync(cancellationToken);
            PerfServer.Settle();

            var load = new CallerLoad(pool, cancellationToken);
            var started = Stopwatch.GetTimestamp();
            using var stopSampling = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            var sampling = SampleAsync(pool, load, tally, started, keepTimeline: round == 0, stopSampling.Token);
            for (var i = 0; i < plan.Count; i++)
            {
                var phase = plan[i];
                status.Status(Markup.Escape($"{label}: {phase.Name}"));
                var before = binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken));
                tally.Current = i;
                await load.SetCallersAsync(phase.Callers);
                var calls = load.Calls;
                var phaseStarted = Stopwatch.GetTimestamp();
                await Task.Delay(phase.Duration, cancellationToken);
                var seconds = Stopwatch.GetElapsedTime(phaseStarted).TotalSeconds;
                var after = binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken));
                tally.Phases[i].Add(seconds, load.Calls - calls, after - before);
            }

            await stopSampling.CancelAsync();
            await sampling;
            tally.Current = -1;
            status.Status(Markup.Escape($"{label}: closing"));
            await load.SetCallersAsync(0);
        });
    }

    private static async Task SampleAsync(
        ServiceChannelPool<IEchoClient> pool, CallerLoad load, Tally tally, long started, bool keepTimeline, CancellationToken cancellationToken)
    {
        using var timer = new PeriodicTimer(SampleEvery);
        try
        {
            while (await timer.WaitForNextTickAsync(cancellationToken))
            {
                var s = pool.GetSnapshot();
                var open = s.Idle + s.Leased + s.Opening;
                if (tally.Current is var i and >= 0)
                {
                    tally.Phases[i].Sample(s.Idle, open, s.IdleTarget);
                }

                if (keepTimeline)
                {
                    tally.Timeline.Add(new HeadroomSample(Stopwatch.GetElapsedTime(started).TotalSeconds, load.Callers, s.Idle, open, s.IdleTarget));
                }
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The run is over.
        }
    }

    /// <summary>Callers making pooled echo calls, each a new proxy over the pool, as an application's requests would.</summary>
    private sealed class CallerLoad(ServiceChannelPool<IEchoClient> pool, CancellationToken cancellationToken)
    {
        private readonly List<(Task Calling, CancellationTokenSource Stop)> _callers = [];
        private long _calls;
        private int _count;

        public long Calls => Interlocked.Read(ref _calls);

        public int Callers => Volatile.Read(ref _count);

        /// <summary>Starts callers, or stops the excess after their call in flight.</summary>
        public async Task SetCallersAsync(int count)
        {
            while (_callers.Count < count)
            {
                var stop = new CancellationTokenSource();
                _callers.Add((Task.Run(() => CallUntilAsync(stop.Token), CancellationToken.None), stop));
            }

            if (_callers.Count > count)
            {
                var leaving = _callers[count..];
                _callers.RemoveRange(count, leaving.Count);
                leaving.ForEach(caller => caller.Stop.Cancel());
                try
                {
                    await Task.WhenAll(leaving.Select(caller => caller.Calling));
                }
                finally
                {
                    leaving.ForEach(caller => caller.Stop.Dispose());
                }
            }

            Volatile.Write(ref _count, count);
        }

        private async Task CallUntilAsync(CancellationToken stop)
        {
            while (!stop.IsCancellationRequested)
            {
                var proxy = new PooledEchoClient(pool);
                try
                {
                    await proxy.OpenAsync(cancellationToken);
                    await proxy.EchoAsync("ping");
                }
                finally
                {
                    proxy.Close();
                }

                Interlocked.Increment(ref _calls);
            }
        }
    }

    /// <summary>Listens to one pool's lease waits and awaited opens, and books them to the step under way.</summary>
    private sealed class PoolInstruments : IDisposable
    {
        private const string WaitTime = "channelpool.channel.wait_time";
        private const string AwaitedOpens = "channelpool.channel.awaited_opens";

        private readonly MeterListener _listener = new();
        private readonly string _poolName;
        private readonly Tally _tally;

        public PoolInstruments(string poolName, Tally tally)
        {
            _poolName = poolName;
            _tally = tally;
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == ChannelPoolTelemetry.MeterName && instrument.Name is WaitTime or AwaitedOpens)
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<double>((_, seconds, tags, _) =>
            {
                if (Phase(tags) is { } phase)
                {
                    var ticks = (long)(seconds * Stopwatch.Frequency);
                    phase.LeaseWait.Record(ticks);
                    if (phase.Kind != HeadroomPhaseKind.Jump)
                    {
                        _tally.LeaseWait.Record(ticks);
                    }
                }
            });
            _listener.SetMeasurementEventCallback<long>((_, leases, tags, _) => Phase(tags)?.AddAwaitedOpens(leases));
            _listener.Start();
        }

        public void Dispose() => _listener.Dispose();

        private PhaseTally? Phase(ReadOnlySpan<KeyValuePair<string, object?>> tags)
        {
            foreach (var tag in tags)
            {
                if (tag.Key == ChannelPoolTelemetry.PoolNameTag)
                {
                    return Equals(tag.Value, _poolName) && _tally.Current is var i and >= 0 ? _tally.Phases[i] : null;
                }
            }

            return null;
        }
    }

    /// <summary>One pool's figures on one binding, summed over the rounds.</summary>
    private sealed class Tally(List<(string Name, HeadroomPhaseKind Kind, int Callers, TimeSpan Duration)> plan)
    {
        private volatile int _current = -1;

        public PhaseTally[] Phases { get; } = [.. plan.Select(p => new PhaseTally(p.Name, p.Kind, p.Callers))];

        public List<HeadroomSample> Timeline { get; } = [];

        /// <summary>Gets the lease waits of the ramp and the low step.</summary>
        public LatencyRecorder LeaseWait { get; } = new();

        /// <summary>Gets or sets the step under way, or -1 between runs.</summary>
        public int Current
        {
            get => _current;
            set => _current = value;
        }

        public HeadroomResult ToResult(string binding, string pool) => new(binding, pool, [.. Phases.Select(p => p.ToPhase())], LeaseWait.Summarize(), Timeline);
    }

    private sealed class PhaseTally(string name, HeadroomPhaseKind kind, int callers)
    {
        private readonly Lock _lock = new();
        private double _seconds;
        private long _calls;
        private long _awaitedOpens;
        private double _idle;
        private double _open;
        private double _target;
        private int _samples;
        private ServerCountsSnapshot _server;

        public HeadroomPhaseKind Kind => kind;

        public LatencyRecorder LeaseWait { get; } = new();

        public void AddAwaitedOpens(long leases) => Interlocked.Add(ref _awaitedOpens, leases);

        public void Sample(int idle, int open, int target)
        {
            lock (_lock)
            {
                _idle += idle;
                _open += open;
                _target += target;
                _samples++;
            }
        }

        public void Add(double seconds, long calls, ServerCountsSnapshot server)
        {
            lock (_lock)
            {
                _seconds += seconds;
                _calls += calls;
                _server = new ServerCountsSnapshot(
                    _server.Connections + server.Connections,
                    _server.TlsHandshakes + server.TlsHandshakes,
                    _server.SessionsStarted + server.SessionsStarted,
                    _server.SessionsEnded + server.SessionsEnded,
                    _server.Calls + server.Calls,
                    _server.EndRecords + server.EndRecords,
                    _server.Negotiations + server.Negotiations);
            }
        }

        public HeadroomPhase ToPhase()
        {
            lock (_lock)
            {
                var samples = Math.Max(_samples, 1);
                return new HeadroomPhase(
                    name, kind, callers, _seconds, _calls, Interlocked.Read(ref _awaitedOpens), LeaseWait.Summarize(), _idle / samples, _open / samples, _target / samples, _server);
            }
        }
    }
}
