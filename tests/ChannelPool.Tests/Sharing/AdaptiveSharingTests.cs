namespace ChannelPool.Tests.Sharing;

public class AdaptiveSharingTests : PoolTestBase
{
    private static readonly TimeSpan Call = TimeSpan.FromMilliseconds(1);

    [Test]
    public async Task LeavesEachLeaseItsOwnChannel_UntilAloneLeasesGiveABaseline_ThenShares()
    {
        var pool = await AdaptivePoolAsync();

        // Two alone leases, and as many more as make one short of a baseline.
        var beforeBaseline = await TwoAtOnceAsync(pool, Call);
        await AloneLeasesAsync(pool, SharingController.BaselineSamples - 3, Call);
        var stillBefore = pool.Sharing!.Allowed;
        await AloneLeasesAsync(pool, 1, Call);
        var afterBaseline = await TwoAtOnceAsync(pool, Call);

        Assert.That(beforeBaseline, Is.False, "a new pool has no baseline to compare shared leases with");
        Assert.That(stillBefore, Is.False, $"{SharingController.BaselineSamples - 1} alone leases are not a baseline yet");
        Assert.That(afterBaseline, Is.True, "with a baseline, the second lease joins the first one's channel");
    }

    [Test]
    public async Task KeepsSharing_WhileSharedLeasesAreAsFastAsAloneOnes()
    {
        var pool = await AdaptivePoolAsync();
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);

        var sharedEachTime = new List<bool>();
        for (var i = 0; i < 200; i++)
        {
            sharedEachTime.Add(await TwoAtOnceAsync(pool, Call));
        }

        Assert.That(sharedEachTime, Has.All.True);
        Assert.That(pool.Sharing!.Stops, Is.Zero);
    }

    [Test]
    public async Task KeepsSharing_WhenSharedLeasesAreSlowerButWithinTheFactor()
    {
        var pool = await AdaptivePoolAsync();
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);

        var within = Call * (SharingController.SlowerFactor - 0.1);
        var sharedEachTime = new List<bool>();
        for (var i = 0; i < 100; i++)
        {
            sharedEachTime.Add(await TwoAtOnceAsync(pool, within));
        }

        Assert.That(sharedEachTime, Has.All.True);
    }

    [Test]
    public async Task StopsSharing_AtTheSharedLeaseThatMakesThemSlowerThanTheFactor_AndLeasesHaveChannelsOfTheirOwn()
    {
        var pool = await AdaptivePoolAsync();
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);

        // As a service that serves one session's calls one at a time: the joiner waits for the first call, then makes its own.
        var queued = Call * 2;
        var rounds = 0;
        while (await TwoAtOnceAsync(pool, queued))
        {
            rounds++;
            Assert.That(rounds, Is.LessThanOrEqualTo(SharingController.VerdictSamples + 1), "sharing should have stopped");
        }

        Assert.That(rounds, Is.EqualTo(SharingController.VerdictSamples), "the verdict waits for its samples, and no longer");
        Assert.That(pool.Sharing!.Stops, Is.EqualTo(1));
        Assert.That(await TwoAtOnceAsync(pool, Call), Is.False, "leases stay apart after the stop");
    }

    [Test]
    public async Task AfterAStop_TriesSharingAgain_OnceTheDelayPassed_AndWaitsTwiceAsLongAfterAFailedTry()
    {
        var pool = await AdaptivePoolAsync();
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);
        await SharedUntilStoppedAsync(pool);

        // The delay has not passed: a fresh baseline alone does not bring sharing back.
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);
        var beforeDelay = await TwoAtOnceAsync(pool, Call);
        Time.Advance(SharingController.FirstProbeDelay);
        await AloneLeasesAsync(pool, 1, Call);
        var afterDelay = await TwoAtOnceAsync(pool, Call * 2);

        // That try fails too; the next waits twice as long.
        await SharedUntilStoppedAsync(pool);
        Time.Advance(SharingController.FirstProbeDelay);
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);
        var afterOneDelay = await TwoAtOnceAsync(pool, Call);
        Time.Advance(SharingController.FirstProbeDelay);
        await AloneLeasesAsync(pool, 1, Call);
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
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);
        await SharedUntilStoppedAsync(pool);

        Time.Advance(SharingController.FirstProbeDelay);
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);
        var sharedEachTime = new List<bool>();
        for (var i = 0; i < SharingController.ProbeSamples * 2; i++)
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

        await AloneLeasesAsync(pool, 1000, Call);

        Assert.That(pool.Sharing!.Allowed, Is.True);
        Assert.That(pool.Sharing.Stops, Is.Zero);
        Assert.That(pool.GetSnapshot() is { Leased: 0, Idle: 4 }, Is.True, $"{pool.GetSnapshot()}");
    }

    [Test]
    public async Task AStop_LetsChannelsAlreadySharedKeepTheirLeases_AndNoNewLeaseJoinsThem()
    {
        var pool = await AdaptivePoolAsync();
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);
        for (var i = 0; i < SharingController.VerdictSamples - 1; i++)
        {
            await TwoAtOnceAsync(pool, Call * 2);
        }

        var first = await pool.AcquireAsync();
        var second = await pool.AcquireAsync();
        var third = await pool.AcquireAsync();
        Time.Advance(Call * 2);
        second.Release();
        var fourth = await pool.AcquireAsync();

        Assert.That(pool.Sharing!.Allowed, Is.False, "the eighth slow shared lease stopped sharing");
        Assert.That(third.Channel, Is.SameAs(first.Channel), "the third joined before the stop");
        Assert.That(fourth.Channel, Is.Not.SameAs(first.Channel), "no lease joins after it");
        first.Release();
        third.Release();
        fourth.Release();
        Assert.That(pool.GetSnapshot() is { Leased: 0, Idle: 4 }, Is.True, $"{pool.GetSnapshot()}");
    }

    [Test]
    public async Task ABrokenSharedChannel_StillFailsEveryLeaseOnIt_WhenSharingIsAdaptive()
    {
        var pool = await AdaptivePoolAsync();
        await AloneLeasesAsync(pool, SharingController.BaselineSamples, Call);
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
    public void AdaptiveSharing_WithSingleUseLeases_IsRefused_NamingTheOption()
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

    /// <summary>Leases one channel at a time, each for <paramref name="duration"/>.</summary>
    private async Task AloneLeasesAsync(DefaultChannelPool<FakeChannel> pool, int count, TimeSpan duration)
    {
        for (var i = 0; i < count; i++)
        {
            var lease = await pool.AcquireAsync();
            Time.Advance(duration);
            lease.Release();
        }
    }

    /// <summary>
    /// Two leases at once, the second held for <paramref name="duration"/> after the first ends; returns whether they
    /// shared a channel.
    /// </summary>
    private async Task<bool> TwoAtOnceAsync(DefaultChannelPool<FakeChannel> pool, TimeSpan duration)
    {
        var first = await pool.AcquireAsync();
        var second = await pool.AcquireAsync();
        var shared = ReferenceEquals(first.Channel, second.Channel);
        Time.Advance(Call);
        first.Release();
        Time.Advance(duration - Call);
        second.Release();
        return shared;
    }

    private async Task SharedUntilStoppedAsync(DefaultChannelPool<FakeChannel> pool)
    {
        var rounds = 0;
        while (pool.Sharing!.Allowed && rounds++ < 100)
        {
            await TwoAtOnceAsync(pool, Call * 2);
        }

        Assert.That(pool.Sharing.Allowed, Is.False, "sharing stopped");
    }
}
