using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Globalization;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using BenchmarkDotNet.Attributes;
using ChannelPool.ServiceModel;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;
using OpenTelemetry;
using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;

namespace ChannelPool.Benchmarks;

/// <summary>
/// What per-call telemetry costs a warm net.tcp call with TLS, against the embedded test host: the same pooled channel
/// leased by hand (no per-call instrumentation at all, the baseline), the proxy with nobody listening (off), with a
/// plain <see cref="ActivityListener"/> and <see cref="MeterListener"/> (on), and with the OpenTelemetry SDK recording
/// every span and measurement into an exporter that drops them (exporting).
/// </summary>
[MemoryDiagnoser]
#pragma warning disable CA1001 // BenchmarkDotNet disposes through [GlobalCleanup], not IDisposable.
public class CallTelemetryCost
#pragma warning restore CA1001
{
    private X509Certificate2 _certificate = null!;
    private NetTcpTestHost _host = null!;
    private ServiceChannelPool<IEchoService> _pool = null!;
    private DefaultChannelPool<IEchoService> _leases = null!;
    private Proxy _proxy = null!;
    private IDisposable? _listening;

    [GlobalSetup(Targets = [nameof(NoInstrumentation), nameof(Off)])]
    public void Setup() => Start();

    [GlobalSetup(Target = nameof(Listener))]
    public void SetupListener()
    {
        Start();
        _listening = new Listeners(spans: true);
    }

    [GlobalSetup(Target = nameof(SdkExporting))]
    public void SetupSdk()
    {
        Start();
        _listening = CreateSdk();
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _listening?.Dispose();
        _pool.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _host.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _certificate.Dispose();
    }

    [Benchmark(Baseline = true, Description = "lease + channel call, no per-call instrumentation")]
    public string NoInstrumentation()
    {
        var lease = _leases.Acquire();
        try
        {
            return lease.Channel.Echo("x");
        }
        finally
        {
            lease.Release();
        }
    }

    [Benchmark(Description = "proxy call, telemetry off (nobody listens)")]
    public string Off() => _proxy.Echo("x");

    [Benchmark(Description = "proxy call, ActivityListener + MeterListener")]
    public string Listener() => _proxy.Echo("x");

    [Benchmark(Description = "proxy call, OpenTelemetry SDK exporting")]
    public string SdkExporting() => _proxy.Echo("x");

    /// <summary>
    /// The same calls timed in alternating rounds in one process, so load from elsewhere on a shared machine hits every
    /// variant alike; each variant's listeners are attached just before its round and removed after it. Per variant: the
    /// median over rounds of process CPU and wall time a call, the caller thread's allocation a call, and the median
    /// over rounds of its ratio to telemetry off in the same round (with the middle half of those ratios). One more
    /// variant has nobody listening but the caller's own activity current, so the call carries the trace context header
    /// and no span: it parts what the in-process test host pays to read that header from what the client pays. Run:
    /// <c>dotnet run -c Release --project perf/ChannelPool.Benchmarks -- telemetry-interleaved [rounds] [calls a round]</c>.
    /// </summary>
    /// <param name="rounds">How many rounds; the first tenth warms up and is dropped.</param>
    /// <param name="callsPerRound">How many calls each variant makes a round.</param>
    public static void RunInterleaved(int rounds, int callsPerRound)
    {
        var bench = new CallTelemetryCost();
        bench.Start();
        try
        {
            (string Name, Func<string> Call, Func<IDisposable?> Attach)[] variants =
            [
                ("lease + channel call, no per-call instrumentation", bench.NoInstrumentation, () => null),
                ("proxy, telemetry off (nobody listens)", bench.Off, () => null),
                ("proxy, nobody listens, caller's activity current (header only)", bench.Off, CallerActivity),
                ("proxy, MeterListener only (duration, no span, no header)", bench.Off, () => new Listeners(spans: false)),
                ("proxy, ActivityListener + MeterListener", bench.Off, () => new Listeners(spans: true)),
                ("proxy, OpenTelemetry SDK exporting", bench.Off, CreateSdk),
            ];
            const int Off = 1;
            var cpu = variants.Select(_ => new List<double>()).ToArray();
            var wall = variants.Select(_ => new List<double>()).ToArray();
            var bytes = variants.Select(_ => new List<double>()).ToArray();
            var thread = variants.Select(_ => new List<double>()).ToArray();
            var threadToOff = variants.Select(_ => new List<double>()).ToArray();
            var cpuToOff = variants.Select(_ => new List<double>()).ToArray();
            var wallToOff = variants.Select(_ => new List<double>()).ToArray();
            using var process = Process.GetCurrentProcess();
            for (var round = 0; round < rounds; round++)
            {
                var roundCpu = new double[variants.Length];
                var roundWall = new double[variants.Length];
                var roundThread = new double[variants.Length];
                for (var i = 0; i < variants.Length; i++)
                {
                    // Every other round in reverse order, so no variant always follows the same one.
                    var v = round % 2 == 0 ? i : variants.Length - 1 - i;
                    using var attached = variants[v].Attach();
                    process.Refresh();
                    var cpuBefore = process.TotalProcessorTime;
                    var allocatedBefore = GC.GetAllocatedBytesForCurrentThread();
                    var threadBefore = ThreadCpuMicroseconds();
                    var started = Stopwatch.GetTimestamp();
                    for (var call = 0; call < callsPerRound; call++)
                    {
                        _ = variants[v].Call();
                    }

                    var elapsed = Stopwatch.GetElapsedTime(started);
                    roundThread[v] = (ThreadCpuMicroseconds() - threadBefore) / callsPerRound;
                    var allocated = GC.GetAllocatedBytesForCurrentThread() - allocatedBefore;
                    process.Refresh();
                    roundCpu[v] = (process.TotalProcessorTime - cpuBefore).TotalMicroseconds / callsPerRound;
                    roundWall[v] = elapsed.TotalMicroseconds / callsPerRound;
                    bytes[v].Add((double)allocated / callsPerRound);
                }

                if (round < rounds / 10)
                {
                    continue;
                }

                for (var v = 0; v < variants.Length; v++)
                {
                    cpu[v].Add(roundCpu[v]);
                    thread[v].Add(roundThread[v]);
                    threadToOff[v].Add(roundThread[v] / roundThread[Off]);
                    wall[v].Add(roundWall[v]);
                    cpuToOff[v].Add(roundCpu[v] / roundCpu[Off]);
                    wallToOff[v].Add(roundWall[v] / roundWall[Off]);
                }
            }

            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{rounds - (rounds / 10)} rounds of {callsPerRound:N0} calls a variant, one caller, net.tcp TLS, the test host in process; medians over rounds, [middle half of the per-round ratios]"));
            Console.WriteLine("| Variant | Caller thread CPU a call | / off, same round | Process CPU a call | / off, same round | Wall a call | / off, same round | Caller thread allocates a call |");
            Console.WriteLine("|---|---:|---:|---:|---:|---:|---:|---:|");
            for (var v = 0; v < variants.Length; v++)
            {
                Console.WriteLine(string.Create(
                    CultureInfo.InvariantCulture,
                    $"| {variants[v].Name} | {Median(thread[v]):F1} µs | {Median(threadToOff[v]):F3} [{Quantile(threadToOff[v], 0.25):F3}–{Quantile(threadToOff[v], 0.75):F3}] | {Median(cpu[v]):F1} µs | {Median(cpuToOff[v]):F3} [{Quantile(cpuToOff[v], 0.25):F3}–{Quantile(cpuToOff[v], 0.75):F3}] | {Median(wall[v]):F1} µs | {Median(wallToOff[v]):F3} [{Quantile(wallToOff[v], 0.25):F3}–{Quantile(wallToOff[v], 0.75):F3}] | {Median(bytes[v]):F0} B |"));
            }
        }
        finally
        {
            bench.Cleanup();
        }

        static IDisposable CallerActivity() =>
            new Activity("caller").SetIdFormat(ActivityIdFormat.W3C).Start();
    }

    private static double Median(List<double> values) => Quantile(values, 0.5);

    /// <summary>The calling thread's CPU time: it runs the proxy, the span, the measurement and the client's send path, not the in-process host.</summary>
    private static double ThreadCpuMicroseconds() =>
        NativeMethods.clock_gettime(NativeMethods.ClockThreadCpuTime, out var time) == 0
            ? (time.Seconds * 1e6) + (time.Nanoseconds / 1e3)
            : throw new InvalidOperationException("clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed: telemetry-interleaved needs Linux.");

    private static double Quantile(List<double> values, double q) => values.Order().ElementAt((int)Math.Round((values.Count - 1) * q));

    internal static IDisposable CreateSdk() => new Sdk2(
        Sdk.CreateTracerProviderBuilder().AddChannelPoolInstrumentation().AddProcessor(new SimpleActivityExportProcessor(new Dropping<Activity>())).Build(),
        Sdk.CreateMeterProviderBuilder().AddChannelPoolInstrumentation()
            .AddReader(new PeriodicExportingMetricReader(new Dropping<Metric>(), exportIntervalMilliseconds: 1_000)).Build());

    private void Start()
    {
        _certificate = TestCertificate.Create();
        _host = NetTcpTestHost.StartAsync(_certificate).GetAwaiter().GetResult();
        _pool = new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(),
            NetTcpTestHost.CreateAddress(_host.EchoAddress),
            new ChannelPoolOptions { PoolSize = 1, MaxLeasesPerChannel = 1 },
            factory => TestCertificate.TrustOnly(factory.Credentials, _certificate));
        _pool.WarmUpAsync(readyChannels: 1).GetAwaiter().GetResult();
        _leases = _pool.GetPool(credentials: null);
        _proxy = new Proxy(_pool);
    }

    private static class NativeMethods
    {
        public const int ClockThreadCpuTime = 3;

        [System.Runtime.InteropServices.DllImport("libc", SetLastError = false)]
#pragma warning disable SA1300, IDE1006 // The C library's name.
        public static extern int clock_gettime(int clock, out Timespec time);
#pragma warning restore SA1300, IDE1006

        public readonly struct Timespec
        {
            public readonly long Seconds;
            public readonly long Nanoseconds;
        }
    }

    private sealed class Proxy(ServiceChannelPool<IEchoService> pool) : PooledClientBase<IEchoService>(pool)
    {
        public string Echo(string text) => Channel.Echo(text);
    }

    internal sealed class Listeners : IDisposable
    {
        private readonly ActivityListener? _activities;
        private readonly MeterListener _meters = new();

        public Listeners(bool spans)
        {
            if (spans)
            {
                _activities = new ActivityListener
                {
                    ShouldListenTo = source => source.Name == CallTelemetry.ActivitySourceName,
                    Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
                };
                ActivitySource.AddActivityListener(_activities);
            }

            _meters.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == CallTelemetry.MeterName)
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _meters.SetMeasurementEventCallback<double>(static (_, _, _, _) => { });
            _meters.Start();
        }

        public void Dispose()
        {
            _activities?.Dispose();
            _meters.Dispose();
        }
    }

    private sealed class Sdk2(TracerProvider tracing, MeterProvider metering) : IDisposable
    {
        public void Dispose()
        {
            tracing.Dispose();
            metering.Dispose();
        }
    }

    private sealed class Dropping<T> : BaseExporter<T>
        where T : class
    {
        public override ExportResult Export(in Batch<T> batch) => ExportResult.Success;
    }
}
