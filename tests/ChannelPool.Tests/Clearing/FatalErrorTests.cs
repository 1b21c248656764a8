using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace ChannelPool.Tests.Clearing;

/// <summary>
/// Clear on a fatal error: an open or a call that fails with an error the <see cref="ChannelPoolOptions.IsFatalError"/>
/// rule recognises retires every channel opened before it, once.
/// </summary>
public class FatalErrorTests : PoolTestBase
{
    private DefaultChannelPool<FakeChannel> PoolWithRule(Action<ChannelPoolOptions>? configure = null, ILoggerFactory? loggerFactory = null, IPooledChannelFactory<FakeChannel>? factory = null)
    {
        var options = RuleOptions();
        configure?.Invoke(options);
        return CreatePool(factory ?? Factory, options, loggerFactory: loggerFactory);
    }

    private static ChannelPoolOptions RuleOptions()
    {
        var options = SmallPool(poolSize: 4);
        options.IsFatalError = static error => error is CertificateReplacedException;
        return options;
    }

    [Test]
    public async Task ACallFailingWithAFatalError_RetiresEveryChannelOpenedBeforeIt()
    {
        var pool = PoolWithRule();
        await pool.WarmUpAsync().Within();
        var before = Factory.Channels.ToList();
        var other = await pool.AcquireAsync();

        var failed = await pool.AcquireAsync();
        failed.MarkBroken(new CertificateReplacedException());
        failed.Dispose();

        await Eventually.That(() => before.Count(c => !c.IsOpen) == 3, "the failed channel and the two idle ones closed");
        Assert.That(other.Channel.IsOpen, Is.True, "the other lease keeps its channel until it returns it");
        other.Dispose();
        await Eventually.That(() => before.All(c => !c.IsOpen), "and then it retired too");
        await UntilIdle(pool, 4);
        Assert.That(Factory.OpenChannels.Intersect(before), Is.Empty, "the pool refilled with new channels");
    }

    [Test]
    public async Task AWaveOfOldChannelsFailing_ClearsOnce_AndSparesTheChannelsOpenedSince()
    {
        var pool = PoolWithRule();
        await pool.WarmUpAsync().Within();
        var firstToFail = await pool.AcquireAsync();
        var secondToFail = await pool.AcquireAsync();

        firstToFail.MarkBroken(new CertificateReplacedException());
        firstToFail.Dispose();
        await UntilIdle(pool, 4);
        await UntilQuiet(pool);
        var opensSince = Factory.OpenChannels.Where(c => c != secondToFail.Channel).ToList();
        secondToFail.MarkBroken(new CertificateReplacedException());
        secondToFail.Dispose();

        await UntilQuiet(pool);
        Assert.That(opensSince, Has.Count.EqualTo(4));
        Assert.That(opensSince, Has.All.Matches<FakeChannel>(c => c.IsOpen), "the second old channel's failure did not clear the new ones");
    }

    [Test]
    public async Task TenCallsFailingInARowWithAFatalError_ClearOnce_AndACallThatSucceedsEndsTheWave()
    {
        await using var services = new ServiceCollection().AddMetrics().BuildServiceProvider();
        using var clears = new MetricCollector<long>(services.GetRequiredService<IMeterFactory>(), ChannelPoolTelemetry.MeterName, "channelpool.pool.clears");
        var pool = CreatePool(Factory, RuleOptions(), meterFactory: services.GetRequiredService<IMeterFactory>());
        await pool.WarmUpAsync().Within();

        // A sustained failure: the channels each clear opens fail the same way.
        for (var call = 0; call < 10; call++)
        {
            await FailOneCall(pool);
        }

        Assert.That(clears.GetMeasurementSnapshot().Sum(m => m.Value), Is.EqualTo(1), "one clear for the wave, not one per failing call");

        (await pool.AcquireAsync().Within()).Dispose();
        await FailOneCall(pool);
        Assert.That(clears.GetMeasurementSnapshot().Sum(m => m.Value), Is.EqualTo(2), "a call that succeeded ended the wave, so the next fatal error clears again");

        static async Task FailOneCall(DefaultChannelPool<FakeChannel> pool)
        {
            var lease = await pool.AcquireAsync().Within();
            lease.MarkBroken(new CertificateReplacedException());
            lease.Dispose();
            await UntilQuiet(pool);
        }
    }

    [Test]
    public async Task OpensFailingWithAFatalErrorOneAfterAnother_ClearOnce()
    {
        await using var services = new ServiceCollection().AddMetrics().BuildServiceProvider();
        using var clears = new MetricCollector<long>(services.GetRequiredService<IMeterFactory>(), ChannelPoolTelemetry.MeterName, "channelpool.pool.clears");
        var pool = CreatePool(Factory, RuleOptions(), meterFactory: services.GetRequiredService<IMeterFactory>());
        await pool.WarmUpAsync().Within();
        Factory.OpenFailure = () => new CertificateReplacedException();

        using (await pool.AcquireAsync().Within())
        {
            // Each failed open pauses the refill with a growing backoff; moving the clock lets the next one through.
            for (var step = 0; step < 60 && Factory.OpenAttempts < 10; step++)
            {
                await UntilQuiet(pool);
                Time.Advance(TimeSpan.FromSeconds(5));
            }
        }

        Assert.That(Factory.OpenAttempts, Is.GreaterThanOrEqualTo(10), "ten opens failed one after another");

        Assert.That(clears.GetMeasurementSnapshot().Sum(m => m.Value), Is.EqualTo(1), "the first failed open cleared; the rest of the wave did not");
    }

    [Test]
    public async Task AnOpenFailingWithAFatalError_RetiresEveryChannelOpenedBefore()
    {
        var pool = PoolWithRule();
        await pool.WarmUpAsync().Within();
        var before = Factory.Channels.ToList();
        var failNext = 1;
        Factory.OpenFailure = () => Interlocked.Exchange(ref failNext, 0) == 1 ? new CertificateReplacedException() : null;
        Factory.HoldOpens();
        var leases = new[] { await pool.AcquireAsync(), await pool.AcquireAsync(), await pool.AcquireAsync() };
        Factory.AllowOpens(1);

        await Eventually.That(() => before.Count(c => !c.IsOpen) == 1, "the refill's failed open retired the idle channel opened before it");
        Assert.That(leases.Select(l => l.Channel), Has.All.Matches<FakeChannel>(c => c.IsOpen), "leased ones go when they come back");
        Factory.StopHoldingOpens();
        foreach (var lease in leases)
        {
            lease.Dispose();
        }

        await Eventually.That(() => before.All(c => !c.IsOpen), "every channel opened before the failed open retired");
        Time.Advance(TimeSpan.FromSeconds(1));
        await UntilIdle(pool, 4);
    }

    [Test]
    public async Task AnErrorTheRuleDoesNotRecognise_RetiresOnlyItsOwnChannel()
    {
        var pool = PoolWithRule();
        await pool.WarmUpAsync().Within();
        var failed = await pool.AcquireAsync();
        var failedChannel = failed.Channel;

        failed.MarkBroken(new TimeoutException("one slow call"));
        failed.Dispose();

        await Eventually.That(() => failedChannel.IsAborted, "the broken channel was aborted");
        await UntilQuiet(pool);
        Assert.That(Factory.Channels.Count(c => !c.IsOpen), Is.EqualTo(1), "and no other channel went with it");
    }

    [Test]
    public async Task WithoutARule_NoErrorClears()
    {
        var pool = PoolWithRule(o => o.IsFatalError = null);
        await pool.WarmUpAsync().Within();
        var failed = await pool.AcquireAsync();

        failed.MarkBroken(new CertificateReplacedException());
        failed.Dispose();

        await UntilQuiet(pool);
        Assert.That(Factory.Channels.Count(c => !c.IsOpen), Is.EqualTo(1));
    }

    [Test]
    public async Task TheFactorysWordOnWhyAChannelIsUnusable_GoesToTheRuleToo()
    {
        var factory = new FailureReportingFactory(Factory);
        var pool = PoolWithRule(factory: factory);
        await pool.WarmUpAsync().Within();
        var before = Factory.Channels.ToList();
        var lease = await pool.AcquireAsync();

        factory.Failures[lease.Channel] = new CertificateReplacedException();
        lease.Channel.Fault();
        lease.Dispose();

        await Eventually.That(() => before.All(c => !c.IsOpen), "the unusable channel's error cleared the pool");
    }

    [Test]
    public async Task ARuleThatThrows_IsLoggedAsAnErrorNamingThePool_AndTheErrorCountsAsNotFatal()
    {
        var logs = new FakeLogCollector();
        using var loggers = new LoggerFactory([new FakeLoggerProvider(logs)]);
        var pool = PoolWithRule(o => o.IsFatalError = static _ => throw new InvalidOperationException("a bug in the rule"), loggers);
        await pool.WarmUpAsync().Within();
        var failed = await pool.AcquireAsync();

        failed.MarkBroken(new CertificateReplacedException());
        Assert.DoesNotThrow(failed.Dispose, "the caller's release is not the place for the rule's bug");

        await UntilQuiet(pool);
        Assert.That(Factory.Channels.Count(c => !c.IsOpen), Is.EqualTo(1), "nothing was cleared");
        var error = logs.GetSnapshot().Single(r => r.Level == LogLevel.Error);
        Assert.That(error.Message, Does.Contain($"IsFatalError rule of channel pool '{pool.Name}' threw").And.Contain(nameof(CertificateReplacedException)));
        Assert.That(error.Exception, Is.InstanceOf<InvalidOperationException>().With.Message.EqualTo("a bug in the rule"));
    }

    [Test]
    public void MarkBroken_WithNoError_ThrowsNamingTheArgument()
    {
        var lease = default(ChannelLease<FakeChannel>);

        Assert.That(() => lease.MarkBroken(null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("error"));
    }

    private sealed class CertificateReplacedException() : Exception("The service presented a certificate the client no longer trusts.");

    /// <summary>A factory that, like the WCF adapter, knows which error made a channel unusable.</summary>
    private sealed class FailureReportingFactory(FakeChannelFactory inner) : IPooledChannelFactory<FakeChannel>
    {
        public Dictionary<FakeChannel, Exception> Failures { get; } = [];

        public ValueTask<FakeChannel> OpenAsync(CancellationToken cancellationToken) => inner.OpenAsync(cancellationToken);

        public bool IsUsable(FakeChannel channel) => inner.IsUsable(channel);

        public ValueTask CloseAsync(FakeChannel channel, CancellationToken cancellationToken) => inner.CloseAsync(channel, cancellationToken);

        public void Abort(FakeChannel channel) => inner.Abort(channel);

        public Exception? GetFailure(FakeChannel channel) => Failures.GetValueOrDefault(channel);
    }
}
