using System.Diagnostics;
using System.Diagnostics.Metrics;
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
        _listening = new Listeners();
    }

    [GlobalSetup(Target = nameof(SdkExporting))]
    public void SetupSdk()
    {
        Start();
        _listening = new Sdk2(
            Sdk.CreateTracerProviderBuilder().AddChannelPoolInstrumentation().AddProcessor(new SimpleActivityExportProcessor(new Dropping<Activity>())).Build(),
            Sdk.CreateMeterProviderBuilder().AddChannelPoolInstrumentation()
                .AddReader(new PeriodicExportingMetricReader(new Dropping<Metric>(), exportIntervalMilliseconds: 1_000)).Build());
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

    private sealed class Proxy(ServiceChannelPool<IEchoService> pool) : PooledClientBase<IEchoService>(pool)
    {
        public string Echo(string text) => Channel.Echo(text);
    }

    private sealed class Listeners : IDisposable
    {
        private readonly ActivityListener _activities = new()
        {
            ShouldListenTo = source => source.Name == CallTelemetry.ActivitySourceName,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        };

        private readonly MeterListener _meters = new();

        public Listeners()
        {
            ActivitySource.AddActivityListener(_activities);
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
            _activities.Dispose();
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
