using System.Diagnostics;
using System.ServiceModel;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;
using System.ServiceModel.Dispatcher;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using OpenTelemetry;
using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>
/// Every call through a pooled proxy, seen through the OpenTelemetry SDK's in-memory exporter over real bindings: one
/// client span and one <c>rpc.client.call.duration</c> measurement, the pool's share, and the trace id at the service.
/// </summary>
[TestFixture]
[NonParallelizable]
public sealed class CallTelemetryTests
{
    public enum CallForm
    {
        Synchronous,
        Task,
        BeginEnd,
    }

    [Test]
    public async Task EachCallForm_MakesOneClientSpanAndOneDuration_AndTheServiceSeesTheCallersTrace(
        [Values(Transport.NetTcp, Transport.BasicHttps, Transport.WsHttps, Transport.SecureConversation)] Transport transport,
        [Values] CallForm form)
    {
        await using var service = await TestService.StartAsync(transport);
        using var recorded = new Recorded();
        string reply;
        using (recorded.Caller())
        {
            reply = form switch
            {
                CallForm.Synchronous => await CallAsync<IEchoService>(service, pool => Task.FromResult(new EchoProxy(pool).Echo("hello"))),
                CallForm.Task => await CallAsync<IAsyncEchoService>(service, pool => new AsyncEchoProxy(pool).EchoAsync("hello")),
                _ => await CallAsync<IApmEchoService>(service, pool =>
                {
                    var proxy = new ApmEchoProxy(pool);
                    return Task.Factory.FromAsync(proxy.BeginEcho, proxy.EndEcho, "hello", state: null);
                }),
            };
        }

        Assert.That(reply, Is.EqualTo("hello"));
        var span = recorded.SingleCallSpan();
        Assert.Multiple(() =>
        {
            Assert.That(span.DisplayName, Is.EqualTo("IEchoService/Echo"));
            Assert.That(span.Kind, Is.EqualTo(ActivityKind.Client));
            Assert.That(span.ParentSpanId, Is.EqualTo(recorded.CallerSpanId), "a child of the caller's current activity");
            Assert.That(span.Status, Is.EqualTo(ActivityStatusCode.Unset));
            Assert.That(span.GetTagItem("rpc.system.name"), Is.EqualTo("dotnet_wcf"));
            Assert.That(span.GetTagItem("rpc.method"), Is.EqualTo("IEchoService/Echo"));
            Assert.That(span.GetTagItem("server.address"), Is.EqualTo("127.0.0.1"));
            Assert.That(span.GetTagItem("server.port"), Is.EqualTo(service.Port));
            Assert.That(span.GetTagItem(ChannelPoolTelemetry.ChannelIdTag), Is.TypeOf<long>());
            Assert.That(span.GetTagItem(CallTelemetry.AcquireDurationTag), Is.TypeOf<double>().And.GreaterThanOrEqualTo(0));
            Assert.That(span.GetTagItem(ChannelPoolTelemetry.ErrorTypeTag), Is.Null);
            Assert.That(service.Counters.TraceParents, Does.Contain(span.Id), "the service received the call span's traceparent");
        });

        var duration = recorded.SingleDuration(service.Port);
        Assert.That(duration.Count, Is.EqualTo(1));
        Assert.That(duration.Sum, Is.EqualTo(span.Duration.TotalSeconds), "the measurement is the span's duration");
        Assert.That(duration.Tags, Does.Not.ContainKey(ChannelPoolTelemetry.ErrorTypeTag));
    }

    [Test]
    public async Task AFault_EndsTheSpanAsAnErrorOfItsType_AndTheDurationCarriesIt([Values(Transport.NetTcp, Transport.BasicHttps)] Transport transport)
    {
        await using var service = await TestService.StartAsync(transport);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        using var recorded = new Recorded();
        using (recorded.Caller())
        {
            Assert.Throws<FaultException>(() => new EchoProxy(pool).Fail("no"));
        }

        AssertFailed(recorded, typeof(FaultException), service.Port, "IEchoService/Fail");
    }

    [Test]
    public async Task ACallToAServiceThatWentDown_EndsTheSpanWithTheCommunicationError()
    {
        await using var service = await TestService.StartAsync(Transport.BasicHttps);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 1);
        await service.StopAsync();
        using var recorded = new Recorded();
        Exception? thrown;
        using (recorded.Caller())
        {
            thrown = Assert.Catch<CommunicationException>(() => new EchoProxy(pool).Echo("anyone?"));
        }

        AssertFailed(recorded, thrown!.GetType(), service.Port, "IEchoService/Echo");
    }

    [Test]
    public async Task ACallThatTimesOut_EndsTheSpanWithTheTimeout()
    {
        await using var service = await TestService.StartAsync(Transport.BasicHttps);
        var binding = Testing.ServiceModel.Soap.SoapTestHost.CreateBasicBinding();
        binding.SendTimeout = TimeSpan.FromMilliseconds(100);
        await using var pool = new ServiceChannelPool<IEchoService>(binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        using var recorded = new Recorded();
        using (recorded.Caller())
        {
            Assert.ThrowsAsync<TimeoutException>(() => new EchoProxy(pool).EchoAfterAsync("late", 5_000));
        }

        AssertFailed(recorded, typeof(TimeoutException), service.Port, "IEchoService/EchoAfter");
    }

    [Test]
    public async Task AnAcquireThatTimesOut_BecauseThePoolIsExhausted_EndsTheSpanWithThePoolTimeout()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1, MaxChannels = 1, MaxLeasesPerChannel = 1, AcquireTimeout = TimeSpan.FromMilliseconds(200) }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 1);
        var holder = new EchoProxy(pool);
        _ = holder.InnerChannel;
        using var recorded = new Recorded();
        using (recorded.Caller())
        {
            Assert.ThrowsAsync<ChannelPoolTimeoutException>(() => new EchoProxy(pool).EchoAfterAsync("waits", 0));
        }

        holder.Close();
        AssertFailed(recorded, typeof(ChannelPoolTimeoutException), service.Port, "IEchoService/EchoAfter");
        Assert.That(recorded.SingleCallSpan().GetTagItem(ChannelPoolTelemetry.ChannelIdTag), Is.Null, "no channel served it");
    }

    [Test]
    public async Task ACallWhileTheServiceIsDownAndTheBreakerOpen_EndsTheSpanWithThePoolsUnavailableError()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        var options = new ChannelPoolOptions { PoolSize = 1 };
        options.Resilience.CircuitBreaker.BreakDuration = TimeSpan.FromSeconds(30);
        options.Resilience.Retry.Delay = TimeSpan.FromMilliseconds(10);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, options, service.Configure);
        await service.StopAsync();
        using var recorded = new Recorded();
        using (recorded.Caller())
        {
            Assert.ThrowsAsync<ChannelPoolUnavailableException>(() => new EchoProxy(pool).EchoAfterAsync("down", 0));
        }

        AssertFailed(recorded, typeof(ChannelPoolUnavailableException), service.Port, "IEchoService/EchoAfter");
    }

    [Test]
    public async Task ACallRefusedBecauseTheBreakerIsOpen_EndsItsSpanWithThePoolsUnavailableError([Values(CallForm.Synchronous, CallForm.Task)] CallForm form)
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        var options = new ChannelPoolOptions { PoolSize = 1 };
        options.Resilience.CircuitBreaker.BreakDuration = TimeSpan.FromMinutes(5);
        options.Resilience.Retry.Delay = TimeSpan.FromMilliseconds(10);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, options, service.Configure);
        await service.StopAsync();

        // The first call waits while the opens fail, until the breaker opens and fails it; the next is refused at once.
        Assert.ThrowsAsync<ChannelPoolUnavailableException>(() => new EchoProxy(pool).EchoAfterAsync("trips the breaker", 0));
        await Eventually.That(() => pool.GetSnapshot().BreakerState == BreakerState.Open, "the breaker opened");
        using var recorded = new Recorded();
        ChannelPoolUnavailableException? refused;
        using (recorded.Caller())
        {
            refused = form == CallForm.Synchronous
                ? Assert.Throws<ChannelPoolUnavailableException>(() => new EchoProxy(pool).Echo("refused"))
                : Assert.ThrowsAsync<ChannelPoolUnavailableException>(() => new EchoProxy(pool).EchoAfterAsync("refused", 0));
        }

        Assert.That(refused!.Snapshot.BreakerState, Is.EqualTo(BreakerState.Open), "refused by the open breaker");
        Assert.That(refused.Snapshot.Waiting, Is.Zero, "refused without waiting");
        var method = form == CallForm.Synchronous ? "IEchoService/Echo" : "IEchoService/EchoAfter";
        AssertFailed(recorded, typeof(ChannelPoolUnavailableException), service.Port, method);
        Assert.That(recorded.SingleCallSpan().GetTagItem(ChannelPoolTelemetry.ChannelIdTag), Is.Null, "no channel served it");
    }

    [Test]
    public async Task ACancelledCall_EndsTheSpanAsAnErrorOfTheCancellationsType_AndTheDurationCarriesIt([Values(CallForm.Synchronous, CallForm.Task)] CallForm form)
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding,
            service.EchoAddress,
            new ChannelPoolOptions { PoolSize = 1 },
            factory =>
            {
                service.Configure(factory);
                factory.Endpoint.EndpointBehaviors.Add(new CancelsEveryCall());
            });
        await pool.WarmUpAsync(readyChannels: 1);
        using var recorded = new Recorded();
        Exception? cancelled;
        using (recorded.Caller())
        {
            cancelled = form == CallForm.Synchronous
                ? Assert.Catch<OperationCanceledException>(() => new EchoProxy(pool).Echo("cancelled"))
                : Assert.CatchAsync<OperationCanceledException>(() => new EchoProxy(pool).EchoAfterAsync("cancelled", 0));
        }

        var method = form == CallForm.Synchronous ? "IEchoService/Echo" : "IEchoService/EchoAfter";
        AssertFailed(recorded, cancelled!.GetType(), service.Port, method);
        Assert.That(recorded.SingleCallSpan().GetTagItem(ChannelPoolTelemetry.ChannelIdTag), Is.TypeOf<long>(), "it was cancelled on its channel");
    }

    [Test]
    public async Task ACallThatWaitedForAnOpen_CarriesTheWait_AndLinksToTheOpenSpanOfItsChannel()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);

        // Nothing is opened before the first call, so the first call waits for the open it caused.
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        using var recorded = new Recorded();
        using (recorded.Caller())
        {
            Assert.That(await new EchoProxy(pool).EchoAfterAsync("first", 0), Is.EqualTo("first"));
        }

        var span = recorded.SingleCallSpan();
        var channelId = (long)span.GetTagItem(ChannelPoolTelemetry.ChannelIdTag)!;
        var open = recorded.Spans.Single(candidate =>
            candidate.OperationName == ChannelPoolTelemetry.OpenActivityName && Equals(candidate.GetTagItem(ChannelPoolTelemetry.ChannelIdTag), channelId));
        Assert.Multiple(() =>
        {
            Assert.That(span.GetTagItem(CallTelemetry.WaitedForOpenTag), Is.True);
            Assert.That((double)span.GetTagItem(CallTelemetry.OpenDurationTag)!, Is.GreaterThan(0).And.LessThanOrEqualTo((double)span.GetTagItem(CallTelemetry.AcquireDurationTag)!));
            Assert.That(span.Links.Select(link => link.Context.SpanId), Is.EqualTo(new[] { open.SpanId }), "the call links to its channel's open span");
        });
    }

    [Test]
    public async Task ACallOnAChannelThatWasAlreadyOpen_SaysItDidNotWaitForAnOpen()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 1);
        using var recorded = new Recorded();
        using (recorded.Caller())
        {
            _ = new EchoProxy(pool).Echo("warm");
        }

        var span = recorded.SingleCallSpan();
        Assert.That(span.GetTagItem(CallTelemetry.WaitedForOpenTag), Is.False);
        Assert.That(span.Links, Is.Empty);
    }

    [Test]
    public async Task ThePropagatorInForce_DecidesWhatTheServiceReceives_AsItDoesForHttpClient([Values(Transport.NetTcp, Transport.BasicHttps)] Transport transport)
    {
        await using var service = await TestService.StartAsync(transport);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        using var recorded = new Recorded();
        var before = DistributedContextPropagator.Current;
        DistributedContextPropagator.Current = DistributedContextPropagator.CreateNoOutputPropagator();
        try
        {
            using (recorded.Caller())
            {
                _ = new EchoProxy(pool).Echo("untraced");
            }
        }
        finally
        {
            DistributedContextPropagator.Current = before;
        }

        Assert.That(recorded.CallSpans().Count(), Is.EqualTo(1), "the span is still recorded");
        Assert.That(service.Counters.TraceParents, Is.Empty, "an application that sends no trace context over HTTP sends none over WCF");

        using (recorded.Caller())
        {
            _ = new EchoProxy(pool).Echo("traced");
        }

        Assert.That(service.Counters.TraceParents, Has.Count.EqualTo(1), "the default propagator sends it again");
    }

    [Test]
    public async Task WithCallsTurnedOff_TheProvidersRecordNoCallSpanAndNoDuration()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        using var recorded = new Recorded(recordCalls: false);
        using (recorded.Caller())
        {
            _ = new EchoProxy(pool).Echo("quiet");
        }

        Assert.That(recorded.CallSpans(), Is.Empty);
        Assert.That(recorded.Durations(service.Port), Is.Empty);
        Assert.That(recorded.Spans.Where(span => span.OperationName == ChannelPoolTelemetry.OpenActivityName), Is.Not.Empty, "the pool's own spans stay on");
    }

    [Test]
    public async Task WithNobodyListening_ACallsTelemetryAllocatesNothing_AndWithAListenerItDoes()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        var proxy = new EchoProxy(pool);
        Assert.That(proxy.Echo("warm"), Is.EqualTo("warm"));
        var method = typeof(IEchoService).GetMethod(nameof(IEchoService.Echo))!;
        var error = new TimeoutException("for the failure path");
        var lease = await pool.GetPool(credentials: null).AcquireAsync();
        var channel = FailureTrackingChannel<IEchoService>.Of(lease.Channel);

        // The hooks every call runs: start, the pool's share, the end on success and on failure.
        long AllocatedBy1000Calls()
        {
            var before = GC.GetAllocatedBytesForCurrentThread();
            for (var i = 0; i < 1000; i++)
            {
                var span = proxy.StartSpan(method);
                span.Acquired(lease.ChannelId, channel);
                span.Stop(i % 2 == 0 ? null : error);
            }

            return GC.GetAllocatedBytesForCurrentThread() - before;
        }

        Assert.That(CallTelemetry.IsListening, Is.False, "no provider in this test listens");
        _ = AllocatedBy1000Calls();
        Assert.That(AllocatedBy1000Calls(), Is.Zero, "no listener: no telemetry allocation per call");

        using (var listener = new ActivityListener
        {
            ShouldListenTo = source => source.Name == CallTelemetry.ActivitySourceName,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        })
        {
            ActivitySource.AddActivityListener(listener);
            Assert.That(AllocatedBy1000Calls(), Is.GreaterThan(1000), "a listener's spans do allocate, so the measurement sees allocations");
        }

        lease.Release();
    }

    private static async Task<string> CallAsync<TContract>(TestService service, Func<ServiceChannelPool<TContract>, Task<string>> call)
        where TContract : class
    {
        await using var pool = new ServiceChannelPool<TContract>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        return await call(pool);
    }

    private static void AssertFailed(Recorded recorded, Type error, int port, string method)
    {
        var span = recorded.SingleCallSpan();
        Assert.Multiple(() =>
        {
            Assert.That(span.DisplayName, Is.EqualTo(method));
            Assert.That(span.Status, Is.EqualTo(ActivityStatusCode.Error));
            Assert.That(span.GetTagItem(ChannelPoolTelemetry.ErrorTypeTag), Is.EqualTo(error.FullName));
        });
        var duration = recorded.SingleDuration(port);
        Assert.That(duration.Tags[ChannelPoolTelemetry.ErrorTypeTag], Is.EqualTo(error.FullName));
        Assert.That(duration.Sum, Is.EqualTo(span.Duration.TotalSeconds));
    }

    /// <summary>Cancels every call before it is sent, as an application's inspector that honours its own cancellation would.</summary>
    private sealed class CancelsEveryCall : IEndpointBehavior, IClientMessageInspector
    {
        public object? BeforeSendRequest(ref Message request, IClientChannel channel) =>
            throw new OperationCanceledException("The caller cancelled the call before it was sent.");

        public void AfterReceiveReply(ref Message reply, object? correlationState)
        {
        }

        public void ApplyClientBehavior(ServiceEndpoint endpoint, ClientRuntime clientRuntime) => clientRuntime.ClientMessageInspectors.Add(this);

        public void AddBindingParameters(ServiceEndpoint endpoint, BindingParameterCollection bindingParameters)
        {
        }

        public void ApplyDispatchBehavior(ServiceEndpoint endpoint, EndpointDispatcher endpointDispatcher)
        {
        }

        public void Validate(ServiceEndpoint endpoint)
        {
        }
    }

    /// <summary>A tracer and a meter provider with in-memory exporters, and the caller's own activity to filter by.</summary>
    private sealed class Recorded : IDisposable
    {
        private static readonly ActivitySource CallerSource = new("ChannelPool.ServiceModel.Tests.Caller");
        private readonly TracerProvider _tracing;
        private readonly MeterProvider _metering;
        private readonly List<OpenTelemetry.Metrics.Metric> _metrics = [];
        private Activity? _caller;

        public Recorded(bool recordCalls = true)
        {
            _tracing = Sdk.CreateTracerProviderBuilder()
                .AddSource(CallerSource.Name)
                .AddChannelPoolInstrumentation(options => options.RecordCalls = recordCalls)
                .AddInMemoryExporter(Spans)
                .Build();
            _metering = Sdk.CreateMeterProviderBuilder()
                .AddChannelPoolInstrumentation(options => options.RecordCalls = recordCalls)
                .AddInMemoryExporter(_metrics)
                .Build();
        }

        public List<Activity> Spans { get; } = [];

        public ActivitySpanId CallerSpanId => _caller!.SpanId;

        public Activity Caller() => _caller = CallerSource.StartActivity("caller")!;

        public IEnumerable<Activity> CallSpans() =>
            Spans.Where(span => span.Source.Name == CallTelemetry.ActivitySourceName && span.TraceId == _caller!.TraceId);

        public Activity SingleCallSpan()
        {
            _tracing.ForceFlush();
            return CallSpans().Single();
        }

        public List<(long Count, double Sum, Dictionary<string, object?> Tags)> Durations(int port)
        {
            _metering.ForceFlush();
            var found = new List<(long, double, Dictionary<string, object?>)>();
            foreach (var metric in _metrics.Where(metric => metric.Name == CallTelemetry.CallDurationName))
            {
                Assert.That(metric.Unit, Is.EqualTo("s"));
                foreach (ref readonly var point in metric.GetMetricPoints())
                {
                    var tags = new Dictionary<string, object?>();
                    foreach (var tag in point.Tags)
                    {
                        tags[tag.Key] = tag.Value;
                    }

                    if (Equals(tags.GetValueOrDefault("server.port"), port))
                    {
                        found.Add((point.GetHistogramCount(), point.GetHistogramSum(), tags));
                    }
                }
            }

            return found;
        }

        public (long Count, double Sum, Dictionary<string, object?> Tags) SingleDuration(int port) => Durations(port).Single();

        public void Dispose()
        {
            _tracing.Dispose();
            _metering.Dispose();
        }
    }
}
