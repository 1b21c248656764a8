using System.Collections.Concurrent;
using System.Diagnostics;

namespace ChannelPool.Tests.Telemetry;

public class TracingTests : PoolTestBase
{
    private readonly ConcurrentQueue<Activity> _spans = new();
    private ActivityListener _listener = null!;

    [SetUp]
    public void Listen()
    {
        // NUnit reuses one fixture instance for every test in the class.
        _spans.Clear();
        _listener = new ActivityListener
        {
            ShouldListenTo = source => source.Name == ChannelPoolTelemetry.ActivitySourceName,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = _spans.Enqueue,
        };
        ActivitySource.AddActivityListener(_listener);
    }

    [TearDown]
    public void StopListening() => _listener.Dispose();

    [Test]
    public async Task EachChannelOpen_IsASpan_TaggedWithThePoolAndChannel()
    {
        var pool = CreatePool(o => o.PoolSize = 3);

        await pool.WarmUpAsync().Within();

        var spans = SpansOf(pool);
        Assert.That(spans, Has.Count.EqualTo(3));
        Assert.That(spans, Has.All.Matches<Activity>(s => s.OperationName == ChannelPoolTelemetry.OpenActivityName && s.Status != ActivityStatusCode.Error));
        Assert.That(spans.Select(s => s.GetTagItem(ChannelPoolTelemetry.ChannelIdTag)), Is.Unique);
    }

    [Test]
    public async Task OpenTriggeredByACallersLease_IsNotAChildOfTheCallersSpan()
    {
        using var requestSource = new ActivitySource("ChannelPool.Tests.Request");
        using var requestListener = new ActivityListener
        {
            ShouldListenTo = source => source.Name == requestSource.Name,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        };
        ActivitySource.AddActivityListener(requestListener);
        var pool = CreatePool(o => o.PoolSize = 2);
        await pool.WarmUpAsync().Within();

        using (var request = requestSource.StartActivity("request"))
        {
            Assert.That(request, Is.Not.Null);
            await using var lease = await pool.AcquireAsync(); // idle falls to the threshold: a refill starts here
            await Eventually.That(() => SpansOf(pool).Count == 3, "the refill's open span ended");
        }

        var refillSpan = SpansOf(pool)[2];
        Assert.That(refillSpan.ParentId, Is.Null, "the refill runs on the background worker, outside the request");
    }

    [Test]
    public async Task FailedOpen_IsAnErrorSpan_NamingTheErrorType()
    {
        Factory.OpenFailure = () => new IOException("connection refused");
        var pool = CreatePool(o =>
        {
            o.PoolSize = 1;
            o.MaxConcurrentOpens = 1;
        });

        _ = pool.WarmUpAsync(0);
        await Eventually.That(() => SpansOf(pool).Count >= 1, "the failed open's span ended");

        var span = SpansOf(pool)[0];
        Assert.That(span.Status, Is.EqualTo(ActivityStatusCode.Error));
        Assert.That(span.StatusDescription, Is.EqualTo("connection refused"));
        Assert.That(span.GetTagItem(ChannelPoolTelemetry.ErrorTypeTag), Is.EqualTo("System.IO.IOException"));
    }

    private List<Activity> SpansOf(DefaultChannelPool<FakeChannel> pool) =>
        _spans.Where(s => Equals(s.GetTagItem(ChannelPoolTelemetry.PoolNameTag), pool.Name)).ToList();
}
