using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace ChannelPool.Tests.Sharing;

public class AdaptiveSharingTests : PoolTestBase
{
    private static readonly TimeSpan Call = TimeSpan.FromMilliseconds(1);

    // As a service that serves one session's calls one at a time: two leases on a shared channel wait for each other's
    // calls, so they take 4 ms for two, 500 leases a second, where one at a time made 1,000: below 1 / 1.5 of it.
    private static readonly TimeSpan Queued = TimeSpan.FromMilliseconds(4);

    [Test]
    public async Task LeavesEachLeaseItsOwnChannel_UntilAWindowOfExclusiveLeasesGivesABaseline_ThenShares()
    {
        var pool = await AdaptivePoolAsync();
        var started = Time.GetTimestamp();

        var beforeBaseline = await TwoAtOnceAsync(pool, Call);
        var leases = await BaselineAsync(pool);
        var afterBaseline = await TwoAtOnceAsync(pool, Call);

        Assert.That(beforeBaseline, Is.False, "a new pool has no baseline to compare shared leases with");
        Assert.That(leases, Is.GreaterThanOrEqualTo(SharingController.MinSamples - 2));
        Assert.That(Time.GetElapsedTime(started), Is.GreaterThanOrEqualTo(SharingController.MinWindow), "a window lasts at least its minimum");
        Assert.That(afterBaseline, Is.True, "with a baseline, the second lease joins the first one's channel");
    }

    [Test]
    public async Task KeepsSharing_WhileLeasesEndAsFastWhenTheyShare()
    {
        var pool = await AdaptivePoolAsync();
        await BaselineAsync(pool);

        var sharedEachTime = new List<bool>();
        for (var i = 0; i < 300; i++)
        {
            sharedEachTime.Add(await TwoAtOnceAsync(pool, Call));
        }

        Assert.That(sharedEachTime, Has.All.True);
        Assert.That(pool.Sharing!.Stops, Is.Zero);
    }

    [Test]
    public async Task KeepsSharing_WhenLeasesEndSlowerWhileTheyShare_ButWithinTheFactor_AndLastLongerButNotByTheStallFactor()
    {
        var pool = await AdaptivePoolAsync();
        await BaselineAsync(pool);

        // Two leases per 2.8 ms: 714 a second, above 1,000 / 1.5; lasting 1.8 and 2.8 ms, far below 8 x 1 ms.
        var within = Call * 2.8;
        var sharedEachTime = new List<bool>();
        for (var i = 0; i < 100; i++)
        {
            sharedEachTime.Add(await TwoAtOnceAsync(pool, within));
        }

        Assert.That(sharedEachTime, Has.All.True);
        Assert.That(pool.Sharing!.Stops, Is.Zero);
    }

    [Test]
    public async Task StopsSharing_AtTheFirstWindowWhoseLeasesEndSlowerByTheFactor_AndLeasesHaveChannelsOfTheirOwn()
    {
        var pool = await AdaptivePoolAsync();
        await BaselineAsync(pool);

        var rounds = 0;
        while (await TwoAtOnceAsync(pool, Queued))
        {
            rounds++;
            Assert.That(rounds, Is.LessThan(100), "sharing should have stopped");
        }

        // One window: from the first lease's end, at least its minimum length, and the round that passes it.
        Assert.That(rounds, Is.LessThanOrEqualTo((SharingController.MinWindow / Queued) + 2));
        Assert.That(pool.Sharing!.Stops, Is.EqualTo(1));
        Assert.That(pool.Sharing.SharingRate * SharingController.SlowerFactor, Is.LessThan(pool.Sharing.BaselineRate));
        Assert.That(await TwoAtOnceAsync(pool, Call), Is.False, "leases stay apart after the stop");
    }

    [Test]
    public async Task AStartAndAStop_AreLogged_WithTheFiguresBehindThem_AndWhenSharingIsTriedAgain()
    {
        var logs = new FakeLogCollector();
        using var loggers = new LoggerFactory([new FakeLoggerProvider(logs)]);
        var pool = CreatePool(Factory, Options(), loggerFactory: loggers);
        await pool.WarmUpAsync().Within();

        await BaselineAsync(pool);
        await SharedUntilStoppedAsync(pool);

        var records = logs.GetSnapshot();
        var started = records.Single(r => r.Id.Id == 41);
        var stopped = records.Single(r => r.Id.Id == 40);
        Assert.That(started.Level, Is.EqualTo(LogLevel.Debug));
        Assert.That(started.Message, Does.Contain($"Channel pool '{pool.Name}' shares channels").And.Contain("ended 1000 a second"));
        Assert.That(stopped.Level, Is.EqualTo(LogLevel.Debug));
        Assert.That(
            stopped.Message,
            Does.Contain($"Channel pool '{pool.Name}' stopped sharing channels").And.Contain("ended 500 a second").And.Contain("against 1000")
                .And.Contain($"tries again in {SharingController.FirstProbeDelay}"));
    }

    [Test]
    public async Task SharingThatPays_PausesForAFreshBaselineEveryFewWindows_AndResumes_WithoutAStopOrALog()
    {
        var logs = new FakeLogCollector();
        using var loggers = new LoggerFactory([new FakeLoggerProvider(logs)]);
        var pool = CreatePool(Factory, Options(), loggerFactory: loggers);
        await pool.WarmUpAsync().Within();
        await BaselineAsync(pool);

        // A window is at least 50 ms: 50 rounds of 1 ms. Enough rounds for the refresh and a good margin after it.
        var sharedEachTime = new List<bool>();
        for (var i = 0; i < (SharingController.RefreshWindows + 4) * 50; i++)
        {
            sharedEachTime.Add(await TwoAtOnceAsync(pool, Call));
        }

        Assert.That(sharedEachTime.Count(shared => !shared), Is.InRange(1, 60), "one window of exclusive leases for the fresh baseline");
        Assert.That(sharedEachTime.TakeLast(50), Has.All.True, "sharing resumed");
        Assert.That(pool.Sharing!.Stops, Is.Zero);
        Assert.That(logs.GetSnapshot().Count(r => r.Id.Id == 40), Is.Zero, "a pause for a fresh baseline is not a stop");
        Assert.That(logs.GetSnapshot().Count(r => r.Id.Id == 41), Is.EqualTo(1), "only the first start is logged");
    }

    [Test]
    public async Task StopsSharing_WhenSharedLeasesLastLongerByTheStallFactor_EvenIfAsManyEndEachSecond()
    {
        var pool = await AdaptivePoolAsync();
        await BaselineAsync(pool);

        // Sixteen leases at once, each 9 ms: 1,778 a second, more than one at a time made, but each far slower.
        var leases = new List<ChannelLease<FakeChannel>>();
        for (var round = 0; round < 10 && pool.Sharing!.Allowed; round++)
        {
            for (var i = 0; i < 16; i++)
            {
                leases.Add(await pool.AcquireAsync());
            }

            Time.Advance(TimeSpan.FromMilliseconds(9));
            leases.ForEach(l => l.Release());
            leases.Clear();
        }

        Assert.That(pool.Sharing!.Allowed, Is.False);
        Assert.That(pool.Sharing.SharingRate, Is.GreaterThan(pool.Sharing.BaselineRate));
        Assert.That(pool.Sharing.SharingMedian, Is.GreaterThan(SharingController.StallFactor * pool.Sharing.Baseline));
    }

    [Test]
    public async Task TimeWithNoLeaseHeld_CountsNeitherForNorAgainstSharing()
    {
        var pool = await AdaptivePoolAsync();
        await BaselineAsync(pool);

        // Callers that pause 20 ms between rounds: counted in wall time, 2 leases per 21 ms would read as a tenth of the rate.
        var sharedEachTime = new List<bool>();
        for (var i = 0; i < 100; i++)
        {
            sharedEachTime.Add(await TwoAtOnceAsync(pool, Call));
            Time.Advance(TimeSpan.FromMilliseconds(20));
        }

        Assert.That(sharedEachTime, Has.All.True);
        Assert.That(pool.Sharing!.Stops, Is.Zero);
        Assert.That(pool.Sharing.SharingRate, Is.GreaterThan(pool.Sharing.BaselineRate));
    }

    [Test]
    public async Task AfterAStop_TriesSharingAgain_OnceTheDelayPassed_AndWaitsTwiceAsLongAfterAFailedTry()
    {
        var pool = await AdaptivePoolAsync();
        await BaselineAsync(pool);
        await SharedUntilStoppedAsync(pool);

        // Exclusive leases for most of the delay do not bring sharing back.
        await AloneLeasesAsync(pool, (int)(SharingController.FirstProbeDelay / Call) - 10);
        var beforeDelay = await TwoAtOnceAsync(pool, Call);
        await BaselineAsync(pool);
        var afterDelay = await TwoAtOnceAsync(pool, Queued);

        // That try fails too; the next waits twice as long.
        await SharedUntilStoppedAsync(pool);
        Time.Advance(SharingController.FirstProbeDelay);
        await AloneLeasesAsync(pool, 60);
        var afterOneDelay = await TwoAtOnceAsync(pool, Call);
        Time.Advance(SharingController.FirstProbeDelay);
        await BaselineAsync(pool);
        var afterTwoDelays = await TwoAtOnceAsync(pool, Call);

        Assert.That(beforeDelay, Is.False, "no try before the delay");
        Assert.That(afterDelay, Is.True, "sharing is tried again after the delay");
        Assert.That(afterOneDelay, Is.False, "after a second stop the delay doubled");
        Assert.That(afterTwoDelays, Is.True);
        Assert.That(pool.Sharing!.Stops, Is.EqualTo(2));
    }

    [Test]
    public async Task FollowsAServiceThatBecameFast_SharingAgainAtTheNextTry()
    {
        var pool = await AdaptivePoolAsync();
        await BaselineAsync(pool);
        await SharedUntilStoppedAsync(pool);

        Time.Advance(SharingController.FirstProbeDelay);
        await BaselineAsync(pool);
        var sharedEachTime = new List<bool>();
        for (var i = 0; i < 300; i++)
        {
            sharedEachTime.Add(await TwoAtOnceAsync(pool, Call));
        }

        Assert.That(sharedEachTime, Has.All.True);
        Assert.That(pool.Sharing!.Stops, Is.EqualTo(1));
    }

    [Test]
    public async Task OneCallerAtATime_NeverStopsSharing_ForThereIsNothingToShare()
    {
        var pool = await AdaptivePoolAsync();

        await AloneLeasesAsync(pool, 1000);

        Assert.That(pool.Sharing!.Allowed, Is.True);
        Assert.That(pool.Sharing.Stops, Is.Zero);
        Assert.That(pool.GetSnapshot() is { Leased: 0, Idle: 4 }, Is.True, $"{pool.GetSnapshot()}");
    }

    [Test]
    public async Task AStop_LetsChannelsAlreadySharedKeepTheirLeases_AndNoNewLeaseJoinsThem()
    {
        var pool = await AdaptivePoolAsync();
        await BaselineAsync(pool);
        var first = await pool.AcquireAsync();
        var second = await pool.AcquireAsync();

        await SharedUntilStoppedAsync(pool);
        var third = await pool.AcquireAsync();
        var stillHeld = (first.IsActive, second.IsActive, SameChannel: ReferenceEquals(first.Channel, second.Channel));
        var thirdJoined = ReferenceEquals(third.Channel, first.Channel);
        first.Release();
        second.Release();
        third.Release();

        Assert.That(stillHeld, Is.EqualTo((true, true, true)), "the leases that shared a channel before the stop keep it");
        Assert.That(thirdJoined, Is.False, "no lease joins it after the stop");
        Assert.That(pool.GetSnapshot() is { Leased: 0, Idle: 4 }, Is.True, $"{pool.GetSnapshot()}");
    }

    [Test]
    public async Task ABrokenSharedChannel_StillFailsEveryLeaseOnIt_WhenSharingIsAdaptive()
    {
        var pool = await AdaptivePoolAsync();
        await BaselineAsync(pool);
        var a = await pool.AcquireAsync();
        var b = await pool.AcquireAsync();
        var shared = a.Channel;

        a.MarkBroken();
        var c = await pool.AcquireAsync();
        var joined = b.Channel;
        a.Release();
        b.Release();

        Assert.That(joined, Is.SameAs(shared));
        Assert.That(c.Channel, Is.Not.SameAs(shared), "no lease joins a broken channel");
        await Eventually.That(() => shared.IsAborted, "the broken channel is aborted after its last lease");
        c.Release();
    }

    [Test]
    public async Task Reconfigured_FromAlwaysToAdaptive_StopsSharingUntilItHasABaseline_AndBackToAlways_SharesAtOnce()
    {
        var options = Options();
        options.LeaseSharing = LeaseSharing.Always;
        var pool = CreatePool(options);
        await pool.WarmUpAsync().Within();
        var sharedWhenAlways = await TwoAtOnceAsync(pool, Call);

        options.LeaseSharing = LeaseSharing.Adaptive;
        pool.Reconfigure(options);
        var sharedWhenAdaptive = await TwoAtOnceAsync(pool, Call);
        options.LeaseSharing = LeaseSharing.Always;
        pool.Reconfigure(options);
        var sharedWhenAlwaysAgain = await TwoAtOnceAsync(pool, Call);

        Assert.That(sharedWhenAlways, Is.True);
        Assert.That(sharedWhenAdaptive, Is.False);
        Assert.That(sharedWhenAlwaysAgain, Is.True);
        Assert.That(pool.Sharing, Is.Null);
    }

    [Test]
    public async Task IsTheDefault_ForLeasesThatMayShare_AndLeftUnset_TheCorePoolNeitherSharesNorTimesLeases()
    {
        var sharing = SmallPool(poolSize: 4, maxChannels: 4);
        sharing.MaxLeasesPerChannel = 8;
        var unset = CreatePool(SmallPool(poolSize: 4, maxChannels: 4));
        var shared = CreatePool(sharing);
        await shared.WarmUpAsync().Within();

        Assert.That((sharing.LeaseSharing, shared.LeaseSharing, shared.Sharing is not null), Is.EqualTo((LeaseSharing.Adaptive, LeaseSharing.Adaptive, true)));
        Assert.That(await TwoAtOnceAsync(shared, Call), Is.False, "no baseline yet, so no sharing");
        Assert.That((unset.MaxLeasesPerChannel, unset.LeaseSharing, unset.Sharing), Is.EqualTo((1, LeaseSharing.Adaptive, (SharingController?)null)));
    }

    [Test]
    public void SharedLeases_WithSingleUseLeases_AreRefused_NamingTheOption_WhateverTheSharing()
    {
        var options = Options();
        options.LeaseMode = LeaseMode.SingleUse;

        Assert.That(
            () => CreatePool(options),
            Throws.TypeOf<Microsoft.Extensions.Options.OptionsValidationException>().With.Message.Contains("MaxLeasesPerChannel must be 1 when LeaseMode is SingleUse"));
    }

    private static ChannelPoolOptions Options()
    {
        var options = SmallPool(poolSize: 4, maxChannels: 4);
        options.MaxLeasesPerChannel = 8;
        options.LeaseSharing = LeaseSharing.Adaptive;
        return options;
    }

    private async Task<DefaultChannelPool<FakeChannel>> AdaptivePoolAsync()
    {
        var pool = CreatePool(Options());
        await pool.WarmUpAsync().Within();
        return pool;
    }

    /// <summary>Leases one channel at a time, each for <see cref="Call"/>.</summary>
    private async Task AloneLeasesAsync(DefaultChannelPool<FakeChannel> pool, int count)
    {
        for (var i = 0; i < count; i++)
        {
            var lease = await pool.AcquireAsync();
            Time.Advance(Call);
            lease.Release();
        }
    }

    /// <summary>Leases one channel at a time until the pool shares channels; returns how many it took.</summary>
    private async Task<int> BaselineAsync(DefaultChannelPool<FakeChannel> pool)
    {
        var leases = 0;
        while (!pool.Sharing!.Allowed)
        {
            await AloneLeasesAsync(pool, 1);
            Assert.That(++leases, Is.LessThan(1000), "a baseline should have been taken");
        }

        return leases;
    }

    /// <summary>
    /// Two leases at once, the second held for <paramref name="duration"/>, the first for 1 ms less but at least
    /// <see cref="Call"/>; returns whether they shared a channel.
    /// </summary>
    private async Task<bool> TwoAtOnceAsync(DefaultChannelPool<FakeChannel> pool, TimeSpan duration)
    {
        var first = await pool.AcquireAsync();
        var second = await pool.AcquireAsync();
        var shared = ReferenceEquals(first.Channel, second.Channel);
        var firstDuration = duration - Call > Call ? duration - Call : Call;
        Time.Advance(firstDuration);
        first.Release();
        Time.Advance(duration - firstDuration);
        second.Release();
        return shared;
    }

    private async Task SharedUntilStoppedAsync(DefaultChannelPool<FakeChannel> pool)
    {
        var rounds = 0;
        while (pool.Sharing!.Allowed && rounds++ < 100)
        {
            await TwoAtOnceAsync(pool, Queued);
        }

        Assert.That(pool.Sharing.Allowed, Is.False, "sharing stopped");
    }
}
