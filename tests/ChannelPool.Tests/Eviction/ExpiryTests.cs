using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;

namespace ChannelPool.Tests.Eviction;

/// <summary>
/// No synchronized expiry: channels opened together do not expire together, a channel is replaced in the background
/// before its deadline, and a caller never finds only expired channels.
/// </summary>
public class ExpiryTests : PoolTestBase
{
    private const int PoolSize = 12;

    [TestCase(4)]
    [TestCase(10)]
    [TestCase(90)]
    public async Task OneCallerOverTenLifetimes_NeverWaitsForAnOpen_AndNoSecondReopensMoreThanAQuarterOfThePool(int lifetimeSeconds)
    {
        await using var services = new ServiceCollection().AddMetrics().BuildServiceProvider();
        var meters = services.GetRequiredService<IMeterFactory>();
        using var awaited = new MetricCollector<long>(meters, ChannelPoolTelemetry.MeterName, "channelpool.channel.awaited_opens");
        var lifetime = TimeSpan.FromSeconds(lifetimeSeconds);
        var pool = CreatePool(DefaultJitterPool(lifetime), meterFactory: meters);
        await pool.WarmUpAsync().Within();
        var step = lifetime / 100;
        var opensBySecond = new Dictionary<int, int>();
        var waited = 0;

        for (var i = 1; i <= 1_000; i++)
        {
            var openedBefore = Factory.Opened;
            Time.Advance(step);
            var acquire = pool.AcquireAsync();
            waited += acquire.IsCompletedSuccessfully ? 0 : 1;
            (await acquire.Within()).Dispose();
            await UntilQuiet(pool);
            var second = (int)(step * i).TotalSeconds;
            opensBySecond[second] = opensBySecond.GetValueOrDefault(second) + Factory.Opened - openedBefore;
        }

        // Every channel is replaced once per lifetime, so at 4 s a quarter of the pool per second is the replacement rate
        // itself (a replacement opens a lead early, so slightly more): there the bound is that rate, rounded up, plus one.
        var lead = PoolState<FakeChannel>.ReplacementLeadFor(lifetime);
        var bound = Math.Max(PoolSize / 4, (int)Math.Ceiling(PoolSize / (lifetime - lead).TotalSeconds) + 1);
        var busiest = opensBySecond.MaxBy(pair => pair.Value);
        Assert.That(waited, Is.Zero, "no lease waited");
        Assert.That(awaited.GetMeasurementSnapshot().Sum(m => m.Value), Is.Zero, "no lease waited for an open");
        Assert.That(busiest.Value, Is.LessThanOrEqualTo(bound), $"second {busiest.Key} reopened {busiest.Value} of {PoolSize} channels");
        Assert.That(Factory.Opened, Is.GreaterThan(PoolSize * 10), "the pool kept its channels within their lifetime");
    }

    [Test]
    public async Task AnAdaptivePoolAtLowDemand_ReplacesEachChannelOncePerLifetime_NotAtItsPoolSizesRate()
    {
        // PoolSize 24, but one caller: the adaptive target comes down to its minimum within a few seconds, and the pool
        // keeps a handful of channels. Those must each live a whole lifetime, as the pool's 24 would: were deadlines
        // spaced for 24 channels, the few would circle the lattice in a fraction of a lifetime and reopen at the rate 24
        // channels need.
        var lifetime = TimeSpan.FromSeconds(20);
        var options = SmallPool(poolSize: 24, maxChannels: 60);
        options.ChannelLifetime = lifetime;
        options.LifetimeJitter = new ChannelPoolOptions().LifetimeJitter;
        options.IdleTarget.Mode = IdleTargetMode.Adaptive;
        options.IdleTarget.Window = TimeSpan.FromSeconds(4);
        options.IdleTarget.DecayHalfLife = TimeSpan.FromSeconds(1);
        var pool = CreatePool(options);
        await pool.WarmUpAsync().Within();
        var step = TimeSpan.FromMilliseconds(100);
        var steps = (int)(lifetime * 10 / step);
        long openedAtHalf = 0;
        var liveSamples = new List<int>();

        for (var i = 1; i <= steps; i++)
        {
            Time.Advance(step);
            (await pool.AcquireAsync().Within()).Dispose();
            await UntilQuiet(pool);
            if (i == steps / 2)
            {
                openedAtHalf = Factory.Opened;
            }
            else if (i > steps / 2)
            {
                var snapshot = pool.GetSnapshot();
                liveSamples.Add(snapshot.Idle + snapshot.Leased + snapshot.Opening);
            }
        }

        // The last five lifetimes: every channel the pool kept is replaced about once a lifetime (a replacement opens a
        // lead early, and one may overlap its predecessor), so at most twice the most channels it held, per lifetime.
        var opens = Factory.Opened - openedAtHalf;
        var held = liveSamples.Max();
        Assert.That(held, Is.LessThan(options.PoolSize / 2), $"the target came down: {pool.GetSnapshot()}");
        Assert.That(opens, Is.LessThanOrEqualTo(5 * 2 * held), $"{opens} opens in five lifetimes, holding at most {held} channels");
        Assert.That(opens, Is.GreaterThanOrEqualTo(5), "the channels it kept were replaced as they aged");
    }

    [Test]
    public async Task AWarmUp_SpreadsItsDeadlinesOverAWholeLifetime_ReplacingOneChannelAtATime()
    {
        var pool = CreatePool(DefaultJitterPool(TimeSpan.FromSeconds(100)));
        await pool.WarmUpAsync().Within();
        var originals = Factory.Channels.ToList();
        var endedAt = new Dictionary<FakeChannel, int>();

        for (var second = 1; second <= 100; second++)
        {
            Time.Advance(TimeSpan.FromSeconds(1));
            await UntilQuiet(pool);
            foreach (var channel in originals.Where(c => !c.IsOpen && !endedAt.ContainsKey(c)))
            {
                endedAt[channel] = second;
            }
        }

        // The lattice's spacing is 98 s / 12, about 8 s, and jitter moves each deadline only within its own slot: the first
        // channel goes within a quarter of the lifetime, the last at about one lifetime, and never more than two (neighbours
        // on a slot's edge) in the same second.
        Assert.That(endedAt, Has.Count.EqualTo(PoolSize), "every channel of the warm-up was replaced within one lifetime");
        Assert.That(endedAt.Values.Min(), Is.LessThanOrEqualTo(25), "the first one early, not at the end of the lifetime");
        Assert.That(endedAt.Values.Max(), Is.GreaterThanOrEqualTo(90));
        Assert.That(endedAt.Values.CountBy(second => second).Max(pair => pair.Value), Is.LessThanOrEqualTo(2), $"one at a time: {string.Join(", ", endedAt.Values.Order())}");
        Assert.That(pool.GetSnapshot().Idle, Is.EqualTo(PoolSize), "each was replaced");
    }

    [Test]
    public async Task AnIdleChannel_IsReplacedBeforeItsDeadline_AndEvictedAtIt()
    {
        var options = SmallPool(poolSize: 1);
        options.ChannelLifetime = TimeSpan.FromSeconds(90);
        var pool = CreatePool(options);
        await pool.WarmUpAsync().Within();
        var original = Factory.Channels.Single();
        var elapsed = TimeSpan.Zero;

        while (Factory.Opened == 1 && elapsed < TimeSpan.FromSeconds(100))
        {
            Time.Advance(TimeSpan.FromMilliseconds(100));
            elapsed += TimeSpan.FromMilliseconds(100);
            await UntilQuiet(pool);
        }

        Assert.That(Factory.Opened, Is.EqualTo(2), "a replacement opened");
        Assert.That(elapsed, Is.LessThan(TimeSpan.FromSeconds(89)).And.GreaterThanOrEqualTo(TimeSpan.FromSeconds(87)), "about one lead (2 s) before the deadline");
        Assert.That(original.IsOpen, Is.True, "the original still serves until its deadline");

        Time.Advance(TimeSpan.FromSeconds(90) - elapsed);
        await Eventually.That(() => original.IsClosed, "the expiry timer closed it at its deadline, without waiting for the cleanup");
        Assert.That(pool.GetSnapshot() is { Idle: 1, Opening: 0 }, Is.True, $"its replacement alone is idle: {pool.GetSnapshot()}");
    }

    [Test]
    public async Task APoolNobodyUses_OpensNothingOnItsOwn_HoweverLongTheExpiryTimerTicks()
    {
        var pool = CreatePool(DefaultJitterPool(TimeSpan.FromSeconds(4)));

        for (var tick = 0; tick < 100; tick++)
        {
            Time.Advance(TimeSpan.FromMilliseconds(100));
            await UntilQuiet(pool);
        }

        Assert.That((Factory.OpenAttempts, pool.GetSnapshot().TotalOpened), Is.EqualTo((0, 0L)), "no open before the first lease or warm-up");
    }

    private static ChannelPoolOptions DefaultJitterPool(TimeSpan lifetime)
    {
        var options = SmallPool(poolSize: PoolSize, maxChannels: 30);
        options.ChannelLifetime = lifetime;
        options.LifetimeJitter = new ChannelPoolOptions().LifetimeJitter;
        return options;
    }
}
