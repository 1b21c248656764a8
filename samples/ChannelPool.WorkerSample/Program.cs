using ChannelPool.Testing.Tls;
using ChannelPool.WorkerSample;
using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;

// A generic-host worker: a TLS echo service runs in-process on 127.0.0.1, and callers reach it through a pool
// registered with AddChannelPool, configured from appsettings.json, warmed before the worker starts and drained at
// stop. The pool's metrics and spans print to the console through OpenTelemetry.
var builder = Host.CreateApplicationBuilder(args);
builder.Services.AddOptions<SampleOptions>().BindConfiguration("Sample");

var server = LoopbackTlsServer.Start();
builder.Services.AddSingleton(server);
builder.Services.AddChannelPool("echo", _ => new TlsChannelFactory(server.EndPoint, server.Certificate))
    .BindConfiguration()
    .AddHealthCheck();
builder.Services.AddHostedService<EchoCallers>();

var interval = builder.Configuration.GetValue("Sample:MetricsInterval", TimeSpan.FromSeconds(5));
builder.Services.AddOpenTelemetry()
    .WithMetrics(metrics => metrics
        .AddChannelPoolInstrumentation()
        .AddConsoleExporter((_, reader) => reader.PeriodicExportingMetricReaderOptions.ExportIntervalMilliseconds = (int)interval.TotalMilliseconds))
    .WithTracing(tracing => tracing
        .AddChannelPoolInstrumentation()
        .AddConsoleExporter());

using var host = builder.Build();

// Providers are created before the pools, so every span and instrument is seen from the first open.
host.Services.GetRequiredService<MeterProvider>();
host.Services.GetRequiredService<TracerProvider>();

await host.RunAsync();
await server.DisposeAsync();
