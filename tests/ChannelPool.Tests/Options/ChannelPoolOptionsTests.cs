using Microsoft.Extensions.Options;
using Polly;

namespace ChannelPool.Tests.Options;

public class ChannelPoolOptionsTests
{
    private static readonly FakeChannelFactory Factory = new();

    private static IEnumerable<TestCaseData> InvalidOptions()
    {
        TestCaseData Case(string name, Action<ChannelPoolOptions> breakIt, string expected) =>
            new TestCaseData(breakIt, expected).SetName($"Rejects {name}");

        yield return Case("PoolSize of zero", o => o.PoolSize = 0, "PoolSize must be between 1 and MaxChannels (126); it was 0.");
        yield return Case("PoolSize above MaxChannels", o => o.PoolSize = 127, "PoolSize must be between 1 and MaxChannels (126); it was 127.");
        yield return Case("MaxChannels of zero", o => o.MaxChannels = 0, "MaxChannels must be between 1 and 2147483647; it was 0.");
        yield return Case("negative RefillThreshold", o => o.RefillThreshold = -1, "RefillThreshold must be at least 0 and less than PoolSize (50); it was -1.");
        yield return Case("RefillThreshold equal to PoolSize", o => o.RefillThreshold = 50, "RefillThreshold must be at least 0 and less than PoolSize (50); it was 50.");
        yield return Case("ChannelLifetime under a second", o => o.ChannelLifetime = TimeSpan.FromMilliseconds(500), "ChannelLifetime must be between 00:00:01 and 1.00:00:00; it was 00:00:00.5000000.");
        yield return Case("ChannelLifetime over a day", o => o.ChannelLifetime = TimeSpan.FromDays(2), "ChannelLifetime must be between 00:00:01 and 1.00:00:00; it was 2.00:00:00.");
        yield return Case("negative LifetimeJitter", o => o.LifetimeJitter = -0.1, "LifetimeJitter must be between 0 and 0.5; it was -0.1.");
        yield return Case("LifetimeJitter above one half", o => o.LifetimeJitter = 0.6, "LifetimeJitter must be between 0 and 0.5; it was 0.6.");
        yield return Case("NaN LifetimeJitter", o => o.LifetimeJitter = double.NaN, "LifetimeJitter must be between 0 and 0.5");
        yield return Case("zero CleanupInterval", o => o.CleanupInterval = TimeSpan.Zero, "CleanupInterval must be greater than zero and at most ChannelLifetime (00:01:30); it was 00:00:00.");
        yield return Case("CleanupInterval longer than the lifetime", o => o.CleanupInterval = TimeSpan.FromSeconds(91), "CleanupInterval must be greater than zero and at most ChannelLifetime (00:01:30); it was 00:01:31.");
        yield return Case("zero AcquireTimeout", o => o.AcquireTimeout = TimeSpan.Zero, "AcquireTimeout must be greater than zero, or Timeout.InfiniteTimeSpan to wait without limit; it was 00:00:00.");
        yield return Case("negative AcquireTimeout", o => o.AcquireTimeout = TimeSpan.FromSeconds(-5), "AcquireTimeout must be greater than zero, or Timeout.InfiniteTimeSpan to wait without limit; it was -00:00:05.");
        yield return Case("zero MaxConcurrentOpens", o => o.MaxConcurrentOpens = 0, "MaxConcurrentOpens must be between 1 and 2147483647; it was 0.");
        yield return Case("zero CloseTimeout", o => o.CloseTimeout = TimeSpan.Zero, "CloseTimeout must be between 00:00:00 exclusive and 1.00:00:00; it was 00:00:00.");
        yield return Case("negative DrainTimeout", o => o.DrainTimeout = TimeSpan.FromSeconds(-1), "DrainTimeout must be between 00:00:00 and 1.00:00:00; it was -00:00:01.");
        yield return Case("null Resilience", o => o.Resilience = null!, "The Resilience field is required.");
        yield return Case("tiny AttemptTimeout", o => o.Resilience.AttemptTimeout.Timeout = TimeSpan.FromMilliseconds(5), "Resilience.AttemptTimeout.Timeout must be between 00:00:00.0100000 and 1.00:00:00; it was 00:00:00.0050000.");
        yield return Case("TotalTimeout below AttemptTimeout", o => o.Resilience.TotalTimeout.Timeout = TimeSpan.FromSeconds(10), "Resilience.TotalTimeout.Timeout must be at least Resilience.AttemptTimeout.Timeout (00:00:30); it was 00:00:10.");
        yield return Case("negative MaxRetryAttempts", o => o.Resilience.Retry.MaxRetryAttempts = -1, "Resilience.Retry.MaxRetryAttempts must be between 1 and 2147483647; it was -1.");
        yield return Case("negative RetryBaseDelay", o => o.Resilience.Retry.Delay = TimeSpan.FromMilliseconds(-1), "Resilience.Retry.Delay must be between 00:00:00 and 1.00:00:00; it was -00:00:00.0010000.");
        yield return Case("BreakerFailureRatio above one", o => o.Resilience.CircuitBreaker.FailureRatio = 1.5, "Resilience.CircuitBreaker.FailureRatio must be between 0 and 1; it was 1.5.");
        yield return Case("BreakerMinimumThroughput of one", o => o.Resilience.CircuitBreaker.MinimumThroughput = 1, "Resilience.CircuitBreaker.MinimumThroughput must be between 2 and 2147483647; it was 1.");
        yield return Case("short BreakerSamplingDuration", o => o.Resilience.CircuitBreaker.SamplingDuration = TimeSpan.FromMilliseconds(100), "Resilience.CircuitBreaker.SamplingDuration must be between 00:00:00.5000000 and 1.00:00:00; it was 00:00:00.1000000.");
        yield return Case("short BreakerBreakDuration", o => o.Resilience.CircuitBreaker.BreakDuration = TimeSpan.FromMilliseconds(100), "Resilience.CircuitBreaker.BreakDuration must be between 00:00:00.5000000 and 1.00:00:00; it was 00:00:00.1000000.");
        yield return Case("null Retry", o => o.Resilience.Retry = null!, "The Resilience.Retry field is required.");
        yield return Case("null CircuitBreaker", o => o.Resilience.CircuitBreaker = null!, "The Resilience.CircuitBreaker field is required.");
        yield return Case("blank Name", o => o.Name = "  ", "Name must not be empty or white space when it is set; it was '  '.");
        yield return Case("undefined LeaseMode", o => o.LeaseMode = (LeaseMode)7, "LeaseMode must be Reuse or SingleUse; it was 7.");
        yield return Case("undefined IdleOrder", o => o.IdleOrder = (IdleOrder)7, "IdleOrder must be MostRecentlyUsed or LeastRecentlyUsed; it was 7.");
        yield return Case("undefined LeaseSharing", o => o.LeaseSharing = (LeaseSharing)7, "LeaseSharing must be Always or Adaptive; it was 7.");
        yield return Case("adaptive LeaseSharing with single-use leases", o => (o.LeaseSharing, o.MaxLeasesPerChannel, o.LeaseMode) = (LeaseSharing.Adaptive, 8, LeaseMode.SingleUse), "MaxLeasesPerChannel must be 1 when LeaseMode is SingleUse, because a single-use channel is closed after its one lease; it was 8.");
        yield return Case("zero IdleTimeout", o => o.IdleTimeout = TimeSpan.Zero, "IdleTimeout must be greater than zero and at most ChannelLifetime (00:01:30), or Timeout.InfiniteTimeSpan to keep idle channels until their lifetime ends; it was 00:00:00.");
        yield return Case("negative IdleTimeout", o => o.IdleTimeout = TimeSpan.FromSeconds(-1), "IdleTimeout must be greater than zero and at most ChannelLifetime (00:01:30), or Timeout.InfiniteTimeSpan to keep idle channels until their lifetime ends; it was -00:00:01.");
        yield return Case("IdleTimeout longer than the lifetime", o => o.IdleTimeout = TimeSpan.FromSeconds(91), "IdleTimeout must be greater than zero and at most ChannelLifetime (00:01:30), or Timeout.InfiniteTimeSpan to keep idle channels until their lifetime ends; it was 00:01:31.");
        yield return Case("zero LeakDetectionThreshold", o => o.LeakDetectionThreshold = TimeSpan.Zero, "LeakDetectionThreshold must be greater than zero and at most 1.00:00:00, or Timeout.InfiniteTimeSpan (\"-00:00:00.001\" in configuration) to turn leak detection off; it was 00:00:00.");
        yield return Case("negative LeakDetectionThreshold", o => o.LeakDetectionThreshold = TimeSpan.FromSeconds(-30), "LeakDetectionThreshold must be greater than zero and at most 1.00:00:00, or Timeout.InfiniteTimeSpan (\"-00:00:00.001\" in configuration) to turn leak detection off; it was -00:00:30.");
        yield return Case("undefined AcquireWhilePaused", o => o.AcquireWhilePaused = (PausedAcquireMode)7, "AcquireWhilePaused must be Fail or Wait; it was 7.");
        yield return Case("null IdleTarget", o => o.IdleTarget = null!, "The IdleTarget field is required.");
        yield return Case("undefined IdleTarget.Mode", o => o.IdleTarget.Mode = (IdleTargetMode)7, "IdleTarget.Mode must be Fixed or Adaptive; it was 7.");
        yield return Case("IdleTarget.Minimum of zero", o => o.IdleTarget.Minimum = 0, "IdleTarget.Minimum must be between 1 and 2147483647; it was 0.");
        yield return Case("adaptive IdleTarget.Minimum above MaxChannels", o => (o.IdleTarget.Mode, o.IdleTarget.Minimum) = (IdleTargetMode.Adaptive, 127), "IdleTarget.Minimum must be at most MaxChannels (126); it was 127.");
        yield return Case("zero IdleTarget.Window", o => o.IdleTarget.Window = TimeSpan.Zero, "IdleTarget.Window must be between 00:00:00.1000000 and 1.00:00:00; it was 00:00:00.");
        yield return Case("IdleTarget.DecayHalfLife over a day", o => o.IdleTarget.DecayHalfLife = TimeSpan.FromDays(2), "IdleTarget.DecayHalfLife must be between 00:00:00.1000000 and 1.00:00:00; it was 2.00:00:00.");
    }

    [TestCaseSource(nameof(InvalidOptions))]
    public void Constructor_RejectsInvalidOption_NamingThePoolTheOptionAndTheRule(Action<ChannelPoolOptions> breakIt, string expected)
    {
        var options = new ChannelPoolOptions { Name = "orders" };
        breakIt(options);

        var error = Assert.Throws<OptionsValidationException>(() => _ = new DefaultChannelPool<FakeChannel>(Factory, options));

        Assert.That(error!.Message, Does.Contain(expected));
        Assert.That(error.Message, Does.StartWith("Channel pool '"), "the message names the pool");
        Assert.That(error.OptionsType, Is.EqualTo(typeof(ChannelPoolOptions)));
    }

    [Test]
    public void Constructor_ReportsEveryBrokenRuleAtOnce()
    {
        var options = new ChannelPoolOptions { PoolSize = 0, MaxConcurrentOpens = 0 };

        var error = Assert.Throws<OptionsValidationException>(() => _ = new DefaultChannelPool<FakeChannel>(Factory, options));

        Assert.That(error!.Failures, Has.Exactly(2).Items);
        Assert.That(error.Message, Does.Contain("PoolSize").And.Contain("MaxConcurrentOpens"));
    }

    [Test]
    public void CustomOpenPipeline_ReplacesTheResilienceNumbers_SoTheyAreNotChecked()
    {
        var options = new ChannelPoolOptions { OpenPipeline = ResiliencePipeline.Empty };
        options.Resilience.CircuitBreaker.MinimumThroughput = 1;

        var result = new ChannelPoolOptionsValidator().Validate("orders", options);

        Assert.That(result.Succeeded, Is.True, string.Join("; ", result.Failures ?? []));
    }

    [Test]
    public void IdleTargetMinimum_AboveMaxChannels_IsAccepted_WhileTheTargetIsFixed()
    {
        var options = new ChannelPoolOptions { PoolSize = 1, MaxChannels = 1 };

        Assert.That(new ChannelPoolOptionsValidator().Validate("orders", options).Succeeded, Is.True, "a fixed target never reads the minimum");
    }

    [Test]
    public void MaxConcurrentOpens_AboveMaxChannels_IsAccepted_BecauseMaxChannelsCapsOpensAnyway()
    {
        var options = new ChannelPoolOptions { PoolSize = 1, MaxChannels = 2, MaxConcurrentOpens = 4 };

        Assert.That(new ChannelPoolOptionsValidator().Validate("orders", options).Succeeded, Is.True);
    }

    [Test]
    public void Defaults_FollowTheOriginalPool()
    {
        var options = new ChannelPoolOptions();
        var settings = PoolSettings.From(options);

        Assert.That(options.PoolSize, Is.EqualTo(50));
        Assert.That(options.MaxChannels, Is.EqualTo(126));
        Assert.That(options.ChannelLifetime, Is.EqualTo(TimeSpan.FromSeconds(90)));
        Assert.That(options.LifetimeJitter, Is.EqualTo(0.1));
        Assert.That(options.AcquireTimeout, Is.EqualTo(TimeSpan.FromSeconds(30)));
        Assert.That((options.RefillThreshold, options.CleanupInterval, options.LeaseMode), Is.EqualTo(((int?)null, (TimeSpan?)null, (LeaseMode?)null)), "left to follow their defaults");
        Assert.That(settings.RefillThreshold, Is.EqualTo(25));
        Assert.That(settings.CleanupInterval, Is.EqualTo(TimeSpan.FromSeconds(43)));
        Assert.That(settings.LeaseMode, Is.EqualTo(LeaseMode.Reuse));
        Assert.That(settings.IdleTimeout, Is.EqualTo(TimeSpan.FromSeconds(45)), "half the lifetime");
        Assert.That((options.LeakDetectionThreshold, options.AcquireWhilePaused, options.IsFatalError), Is.EqualTo(((TimeSpan?)null, PausedAcquireMode.Fail, (Func<Exception, bool>?)null)), "leak detection off, fail while paused, no fatal-error rule");
        Assert.That(options.IdleTarget.Mode, Is.EqualTo(IdleTargetMode.Fixed), "the original's fixed 50 stays the default (docs/configuration.md says why)");
        Assert.That(settings.IdleTarget, Is.EqualTo(new IdleTargetSettings(IdleTargetMode.Fixed, 2, TimeSpan.FromSeconds(90), TimeSpan.FromSeconds(30))));
        Assert.That(new ChannelPoolOptionsValidator().Validate(null, options).Succeeded, Is.True);
    }

    [Test]
    public void IdleTimeout_FollowsChannelLifetime_AndAnUnsetCleanupIntervalFollowsTheIdleTimeout()
    {
        var options = new ChannelPoolOptions { ChannelLifetime = TimeSpan.FromSeconds(600) };
        Assert.That(PoolSettings.From(options).IdleTimeout, Is.EqualTo(TimeSpan.FromSeconds(300)));
        Assert.That(PoolSettings.From(options).CleanupInterval, Is.EqualTo(TimeSpan.FromSeconds(298)), "half the lifetime less 2 s is shorter still");

        options.IdleTimeout = TimeSpan.FromSeconds(20);
        Assert.That(PoolSettings.From(options).CleanupInterval, Is.EqualTo(TimeSpan.FromSeconds(20)), "a cleanup at least once per idle timeout");

        options.IdleTimeout = Timeout.InfiniteTimeSpan;
        Assert.That(PoolSettings.From(options).CleanupInterval, Is.EqualTo(TimeSpan.FromSeconds(298)), "an idle timeout that is off does not shorten it");

        options.IdleTimeout = TimeSpan.FromSeconds(20);
        options.CleanupInterval = TimeSpan.FromSeconds(60);
        Assert.That(PoolSettings.From(options).CleanupInterval, Is.EqualTo(TimeSpan.FromSeconds(60)), "a CleanupInterval that is set wins");
    }

    [Test]
    public void AnInfiniteLeakDetectionThreshold_IsAccepted_AndTurnsDetectionOff()
    {
        var options = new ChannelPoolOptions { LeakDetectionThreshold = Timeout.InfiniteTimeSpan };

        using var pool = new DefaultChannelPool<FakeChannel>(Factory, options);
        Assert.That(PoolSettings.From(options).LeakDetectionThreshold, Is.Null);
    }

    [Test]
    public void RefillThreshold_FollowsPoolSize_UntilSetExplicitly()
    {
        var options = new ChannelPoolOptions { PoolSize = 20 };
        Assert.That(PoolSettings.From(options).RefillThreshold, Is.EqualTo(10));

        options.RefillThreshold = 3;
        options.PoolSize = 40;

        Assert.That(PoolSettings.From(options).RefillThreshold, Is.EqualTo(3));
    }

    [Test]
    public void RefillThreshold_FollowsPoolSize_WhenThePoolIsReconfigured()
    {
        var options = new ChannelPoolOptions { PoolSize = 20 };
        using var pool = new DefaultChannelPool<FakeChannel>(new FakeChannelFactory(), options, new FakeTimeProvider());
        Assert.That(pool.RefillThreshold, Is.EqualTo(10));

        options.PoolSize = 40;
        pool.Reconfigure(options);

        Assert.That(pool.RefillThreshold, Is.EqualTo(20));
    }

    [Test]
    public void CleanupInterval_FollowsChannelLifetime_UntilSetExplicitly()
    {
        var options = new ChannelPoolOptions { ChannelLifetime = TimeSpan.FromSeconds(300) };
        Assert.That(PoolSettings.From(options).CleanupInterval, Is.EqualTo(TimeSpan.FromSeconds(148)));

        options.ChannelLifetime = TimeSpan.FromSeconds(4);
        Assert.That(PoolSettings.From(options).CleanupInterval, Is.EqualTo(TimeSpan.FromSeconds(1)), "a quarter of a short lifetime, not half less two seconds");

        options.CleanupInterval = TimeSpan.FromSeconds(2);
        options.ChannelLifetime = TimeSpan.FromSeconds(600);
        Assert.That(PoolSettings.From(options).CleanupInterval, Is.EqualTo(TimeSpan.FromSeconds(2)));
    }

    [Test]
    public void IdleTargetWindow_FollowsChannelLifetime_AndTheHalfLifeTheWindow_UntilSetExplicitly()
    {
        var options = new ChannelPoolOptions { ChannelLifetime = TimeSpan.FromSeconds(30) };
        Assert.That(PoolSettings.From(options).IdleTarget, Is.EqualTo(new IdleTargetSettings(IdleTargetMode.Fixed, 2, TimeSpan.FromSeconds(30), TimeSpan.FromSeconds(10))));

        options.IdleTarget.Window = TimeSpan.FromMinutes(5);
        Assert.That(PoolSettings.From(options).IdleTarget.DecayHalfLife, Is.EqualTo(TimeSpan.FromSeconds(100)));

        options.IdleTarget.DecayHalfLife = TimeSpan.FromSeconds(7);
        options.ChannelLifetime = TimeSpan.FromSeconds(600);
        Assert.That(PoolSettings.From(options).IdleTarget, Is.EqualTo(new IdleTargetSettings(IdleTargetMode.Fixed, 2, TimeSpan.FromMinutes(5), TimeSpan.FromSeconds(7))));
    }

    [Test]
    public void CopyConstructor_CopiesEverySetting_AndKeepsUnsetOnesFollowingTheirDefaults()
    {
        var original = new ChannelPoolOptions
        {
            Name = "orders",
            PoolSize = 7,
            MaxChannels = 9,
            RefillThreshold = 2,
            ChannelLifetime = TimeSpan.FromSeconds(61),
            LifetimeJitter = 0.2,
            CleanupInterval = TimeSpan.FromSeconds(11),
            LeaseMode = LeaseMode.SingleUse,
            IdleOrder = IdleOrder.LeastRecentlyUsed,
            MaxLeasesPerChannel = 3,
            LeaseSharing = LeaseSharing.Always,
            AcquireTimeout = TimeSpan.FromSeconds(12),
            MaxConcurrentOpens = 5,
            CloseTimeout = TimeSpan.FromSeconds(13),
            DrainTimeout = TimeSpan.FromSeconds(14),
            IdleTimeout = TimeSpan.FromSeconds(15),
            LeakDetectionThreshold = TimeSpan.FromSeconds(16),
            FactoryLifetime = TimeSpan.FromSeconds(17),
            AcquireWhilePaused = PausedAcquireMode.Wait,
            IsFatalError = static _ => true,
            OpenPipeline = Polly.ResiliencePipeline.Empty,
        };

        original.IdleTarget.Mode = IdleTargetMode.Adaptive;
        original.IdleTarget.Minimum = 4;
        original.IdleTarget.Window = TimeSpan.FromSeconds(15);
        original.IdleTarget.DecayHalfLife = TimeSpan.FromSeconds(16);

        var copy = new ChannelPoolOptions(original);

        // The idle target's options are copied, not shared, so one pool's can change without another's.
        Assert.That(copy.IdleTarget, Is.Not.SameAs(original.IdleTarget));
        foreach (var property in typeof(IdleTargetOptions).GetProperties())
        {
            Assert.That(property.GetValue(copy.IdleTarget), Is.EqualTo(property.GetValue(original.IdleTarget)), $"IdleTarget.{property.Name}");
            Assert.That(property.GetValue(copy.IdleTarget), Is.Not.EqualTo(property.GetValue(new IdleTargetOptions())), $"IdleTarget.{property.Name} differs from its default in this test");
        }

        // Every public property, so an option added later and forgotten in the copy constructor fails here.
        foreach (var property in typeof(ChannelPoolOptions).GetProperties().Where(p => p.Name != nameof(ChannelPoolOptions.IdleTarget)))
        {
            Assert.That(property.GetValue(copy), Is.EqualTo(property.GetValue(original)), property.Name);
            Assert.That(property.GetValue(copy), Is.Not.EqualTo(property.GetValue(new ChannelPoolOptions())), $"{property.Name} differs from its default in this test");
        }

        var unset = new ChannelPoolOptions(new ChannelPoolOptions { PoolSize = 30 });
        Assert.That(PoolSettings.From(unset).RefillThreshold, Is.EqualTo(15));
        Assert.That(unset.LeaseMode, Is.Null);
    }

    [Test]
    public void Pool_CopiesItsOptions_SoLaterChangesHaveNoEffect()
    {
        var options = new ChannelPoolOptions { PoolSize = 5, LeaseMode = LeaseMode.SingleUse };
        using var pool = new DefaultChannelPool<FakeChannel>(new FakeChannelFactory(), options, new FakeTimeProvider());

        options.LeaseMode = LeaseMode.Reuse;

        Assert.That(pool.LeaseMode, Is.EqualTo(LeaseMode.SingleUse));
        Assert.That(pool.Name, Is.EqualTo(nameof(FakeChannel)), "an unnamed pool is named after its channel type");
    }
}
