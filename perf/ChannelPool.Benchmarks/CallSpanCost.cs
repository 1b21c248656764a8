using System.Diagnostics;
using System.IO;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using System.ServiceModel.Channels;
using System.Xml;
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
/// The per-call telemetry's own work on the caller's thread, without the call around it, so it can be timed to the
/// nanosecond and set against a warm call's time: what <see cref="OperationChannel{TContract}"/> runs for every call
/// (the listening check, the span's start, the pool's share, the span's end and the duration measurement), and what the
/// trace context inspector adds to a net.tcp message (two SOAP headers, built and written by the binary encoder's writer).
/// The channel is a real pooled net.tcp channel, so the pool's share reads what a call reads.
/// </summary>
[MemoryDiagnoser]
#pragma warning disable CA1001 // BenchmarkDotNet disposes through [GlobalCleanup], not IDisposable.
public class CallSpanCost
#pragma warning restore CA1001
{
    private X509Certificate2 _certificate = null!;
    private NetTcpTestHost _host = null!;
    private ServiceChannelPool<IEchoService> _pool = null!;
    private ChannelLease<IEchoService> _lease;
    private FailureTrackingChannel<IEchoService> _channel = null!;
    private CallTarget _target = null!;
    private IDisposable? _listening;
    private Activity? _caller;
    private TraceContextPropagation _propagation = null!;
    private XmlDictionaryWriter _writer = null!;

    [GlobalSetup(Targets = [nameof(SpanNobodyListens), nameof(HeaderNone)])]
    public void Setup() => Start();

    [GlobalSetup(Target = nameof(SpanListeners))]
    public void SetupListeners()
    {
        Start();
        _listening = new CallTelemetryCost.Listeners(spans: true);
    }

    [GlobalSetup(Target = nameof(SpanSdk))]
    public void SetupSdk()
    {
        Start();
        _listening = CallTelemetryCost.CreateSdk();
    }

    [GlobalSetup(Target = nameof(HeaderWritten))]
    public void SetupHeader()
    {
        Start();
        _caller = new Activity("caller").SetIdFormat(ActivityIdFormat.W3C).Start();
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _caller?.Dispose();
        _listening?.Dispose();
        _writer.Dispose();
        _lease.Release();
        _pool.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _host.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _certificate.Dispose();
    }

    [Benchmark(Baseline = true, Description = "span + duration, nobody listens")]
    public void SpanNobodyListens() => Span();

    [Benchmark(Description = "span + duration, ActivityListener + MeterListener")]
    public void SpanListeners() => Span();

    [Benchmark(Description = "span + duration, OpenTelemetry SDK exporting")]
    public void SpanSdk() => Span();

    [Benchmark(Description = "trace context inspector, no current activity")]
    public void HeaderNone() => Header();

    [Benchmark(Description = "trace context inspector, header built and written")]
    public void HeaderWritten() => Header();

    private void Span()
    {
        // As OperationChannel runs it around every call.
        var span = CallTelemetry.IsListening ? CallSpan.Start(_target) : default;
        span.Acquired(_lease.ChannelId, _channel);
        span.Stop(error: null);
    }

    private void Header()
    {
        var message = Message.CreateMessage(MessageVersion.Soap12WSAddressing10, "urn:echo");
        _ = _propagation.BeforeSendRequest(ref message, null!);
        for (var i = 0; i < message.Headers.Count; i++)
        {
            message.Headers.WriteHeader(i, _writer);
        }

        _writer.Flush();
        message.Close();
    }

    private void Start()
    {
        _certificate = TestCertificate.Create();
        _host = NetTcpTestHost.StartAsync(_certificate).GetAwaiter().GetResult();
        var address = NetTcpTestHost.CreateAddress(_host.EchoAddress);
        _pool = new ServiceChannelPool<IEchoService>(
            NetTcpTestHost.CreateBinding(),
            address,
            new ChannelPoolOptions { PoolSize = 1 },
            factory => TestCertificate.TrustOnly(factory.Credentials, _certificate));
        _pool.WarmUpAsync(readyChannels: 1).GetAwaiter().GetResult();
        _lease = _pool.GetPool(credentials: null).Acquire();
        _channel = FailureTrackingChannel<IEchoService>.Of(_lease.Channel);
        _target = new CallTarget("IEchoService/Echo", address.Uri.Host, address.Uri.Port);
        _propagation = new TraceContextPropagation(http: false);
        _writer = XmlDictionaryWriter.CreateBinaryWriter(Stream.Null);
    }
}
