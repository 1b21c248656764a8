using System.Collections.Concurrent;
using Microsoft.Extensions.Options;

namespace ChannelPool.Tests.Leasing;

public class SharedLeaseTests : PoolTestBase
{
    [Test]
    public async Task ByDefault_EachLeaseHasAChannelOfItsOwn()
    {
        var pool = CreatePool(o => o.PoolSize = 3);
        await pool.WarmUpAsync().Within();

        await using var first = await pool.AcquireAsync();
        await using var second = await pool.AcquireAsync();

        Assert.That((new ChannelPoolOptions().MaxLeasesPerChannel, pool.MaxLeasesPerChannel), Is.EqualTo(((int?)null, 1)), "left unset, the core pool gives a lease its channel to itself");
        Assert.That(second.Channel, Is.Not.SameAs(first.Channel));
    }

    [Test]
    public async Task UpToMaxLeasesPerChannel_ShareOneChannel_AndTheNextLeaseTakesAnother()
    {
        var pool = SharingPool(leasesPerChannel: 4, poolSize: 3, maxChannels: 3);
        await pool.WarmUpAsync().Within();

        var leases = new List<ChannelLease<FakeChannel>>();
        for (var i = 0; i < 5; i++)
        {
            leases.Add(await pool.AcquireAsync());
        }

        Assert.That(leases.Take(4).Select(l => l.Channel).Distinct().Count(), Is.EqualTo(1), "the first four share a channel");
        Assert.That(leases[4].Channel, Is.Not.SameAs(leases[0].Channel), "the fifth finds the first full");
        Assert.That(pool.GetSnapshot() is { Leased: 2, Idle: 1 }, Is.True, $"leased counts channels, not leases: {pool.GetSnapshot()}");
        leases.ForEach(l => l.Release());
    }

    [Test]
    public async Task ASharedChannel_GoesBackToIdle_OnlyWhenItsLastLeaseEnds()
    {
        var pool = SharingPool(leasesPerChannel: 3, poolSize: 2, maxChannels: 2);
        await pool.WarmUpAsync().Within();
        var a = await pool.AcquireAsync();
        var b = await pool.AcquireAsync();

        a.Release();
        var whileOneRemains = pool.GetSnapshot();
        b.Release();

        Assert.That(whileOneRemains is { Leased: 1, Idle: 1 }, Is.True, $"{whileOneRemains}");
        Assert.That(pool.GetSnapshot() is { Leased: 0, Idle: 2, Closing: 0 }, Is.True, $"{pool.GetSnapshot()}");
        Assert.That(Factory.Channels.All(c => c.IsOpen), Is.True, "a healthy shared channel is kept");
    }

    [Test]
    public async Task ReleasingASharedLeaseTwice_LeavesTheOtherLeases_AndTheSlotsNextHolder_Alone()
    {
        var pool = SharingPool(leasesPerChannel: 2, poolSize: 2, maxChannels: 2);
        await pool.WarmUpAsync().Within();
        var a = await pool.AcquireAsync();
        var b = await pool.AcquireAsync();

        a.Release();
        a.Release();
        var c = await pool.AcquireAsync();
        a.Release();

        Assert.That(b.IsActive, Is.True);
        Assert.That(c.IsActive, Is.True);
        Assert.That(c.Channel, Is.SameAs(b.Channel), "the freed slot was taken again");
        Assert.That(a.IsActive, Is.False);
        Assert.That(() => a.Channel, Throws.InvalidOperationException.With.Message.Contains("already released"));
        Assert.That(pool.GetSnapshot() is { Leased: 1, Idle: 1 }, Is.True, $"{pool.GetSnapshot()}");
        b.Release();
        c.Release();
    }

    [Test]
    public async Task ABrokenSharedChannel_TakesNoMoreLeases_AndIsAbortedWhenItsLastLeaseEnds()
    {
        var pool = SharingPool(leasesPerChannel: 4, poolSize: 3);
        await pool.WarmUpAsync().Within();
        var a = await pool.AcquireAsync();
        var b = await pool.AcquireAsync();
        var shared = a.Channel;

        a.MarkBroken();
        var c = await pool.AcquireAsync();
        a.Release();
        var afterFirstRelease = shared.IsAborted;
        b.Release();

        Assert.That(c.Channel, Is.Not.SameAs(shared), "no lease joins a broken channel");
        Assert.That(afterFirstRelease, Is.False, "another lease still held it");
        await Eventually.That(() => shared.IsAborted, "the broken channel is aborted after its last lease");
        Assert.That(shared.EndCalls, Is.EqualTo(1));
        c.Release();
    }

    [Test]
    public async Task ASharedChannelTheFactoryFindsUnusable_TakesNoMoreLeases_AndIsAbortedWhenItsLastLeaseEnds()
    {
        var pool = SharingPool(leasesPerChannel: 4, poolSize: 3);
        await pool.WarmUpAsync().Within();
        var a = await pool.AcquireAsync();
        var faulted = a.Channel;

        faulted.Fault();
        var b = await pool.AcquireAsync();
        a.Release();

        Assert.That(b.Channel, Is.Not.SameAs(faulted), "a lease asks the factory before joining");
        await Eventually.That(() => faulted.IsAborted, "the faulted channel is aborted after its last lease");
        b.Release();
    }

    [Test]
    public async Task ASharedChannelPastItsLifetime_TakesNoMoreLeases_AndIsClosedWhenItsLastLeaseEnds()
    {
        var pool = CreatePool(o =>
        {
            o.PoolSize = 2;
            o.MaxLeasesPerChannel = 4;
            o.LeaseSharing = LeaseSharing.Always;
            o.ChannelLifetime = TimeSpan.FromSeconds(30);
        });
        await pool.WarmUpAsync().Within();
        var a = await pool.AcquireAsync();
        var old = a.Channel;

        Time.Advance(TimeSpan.FromSeconds(31));
        var b = await pool.AcquireAsync();
        a.Release();

        Assert.That(b.Channel, Is.Not.SameAs(old));
        await Eventually.That(() => old.IsClosed, "the expired channel is closed gracefully after its last lease");
        b.Release();
    }

    [Test]
    public async Task AWaitingCaller_GetsTheSlotASharedLeaseFrees()
    {
        var pool = SharingPool(leasesPerChannel: 2, poolSize: 1, maxChannels: 1);
        await pool.WarmUpAsync().Within();
        var a = await pool.AcquireAsync();
        var b = await pool.AcquireAsync();
        var waiting = pool.AcquireAsync().AsTask();

        var waitedWhileFull = !waiting.IsCompleted;
        a.Release();
        var c = await waiting.Within();

        Assert.That(waitedWhileFull, Is.True);
        Assert.That(c.Channel, Is.SameAs(b.Channel));
        Assert.That(b.IsActive, Is.True);
        b.Release();
        c.Release();
    }

    [Test]
    public async Task ANewlyOpenedChannel_GoesToAsManyWaitingCallersAsItCanCarry()
    {
        Factory.HoldOpens();
        var pool = SharingPool(leasesPerChannel: 3, poolSize: 1, maxChannels: 1);
        var waiting = Enumerable.Range(0, 3).Select(_ => pool.AcquireAsync().AsTask()).ToList();

        Factory.AllowOpens(1);
        var leases = await Task.WhenAll(waiting).Within();

        Assert.That(leases.Select(l => l.Channel).Distinct().Count(), Is.EqualTo(1));
        Assert.That(Factory.Opened, Is.EqualTo(1));
        foreach (var lease in leases)
        {
            lease.Release();
        }
    }

    [Test]
    public async Task Drain_WaitsForEveryLeaseOnASharedChannel_ThenClosesItOnce()
    {
        var pool = SharingPool(leasesPerChannel: 2, poolSize: 1);
        await pool.WarmUpAsync().Within();
        var a = await pool.AcquireAsync();
        var b = await pool.AcquireAsync();
        var channel = a.Channel;

        var drain = pool.DrainAsync();
        var joinAfterDrain = pool.AcquireAsync().AsTask();
        a.Release();
        var openWhileBHolds = channel.IsOpen;
        b.Release();
        await drain.Within();

        Assert.That(async () => await joinAfterDrain, Throws.TypeOf<ObjectDisposedException>(), "no lease joins a draining pool's channel");
        Assert.That(openWhileBHolds, Is.True);
        Assert.That(channel.IsClosed, Is.True);
        Assert.That(channel.EndCalls, Is.EqualTo(1));
    }

    [Test]
    public async Task ReconfiguredToOneLeasePerChannel_NewLeasesStopJoining()
    {
        var options = SmallPool(poolSize: 3, maxChannels: 3);
        options.MaxLeasesPerChannel = 4;
        options.LeaseSharing = LeaseSharing.Always;
        var pool = CreatePool(options);
        await pool.WarmUpAsync().Within();
        var a = await pool.AcquireAsync();

        var exclusive = SmallPool(poolSize: 3, maxChannels: 3);
        pool.Reconfigure(exclusive);
        var b = await pool.AcquireAsync();

        Assert.That(b.Channel, Is.Not.SameAs(a.Channel));
        a.Release();
        b.Release();
        Assert.That(pool.GetSnapshot() is { Leased: 0, Idle: 3 }, Is.True, $"{pool.GetSnapshot()}");
    }

    [Test]
    public async Task ManyCallersAtOnce_NeverPutMoreThanMaxLeasesOnAChannel_AndLeaveTheCountsWhole()
    {
        var pool = SharingPool(leasesPerChannel: 3, poolSize: 2, maxChannels: 3);
        await pool.WarmUpAsync().Within();
        var holders = new ConcurrentDictionary<FakeChannel, int>();
        var most = 0;

        await Task.WhenAll(Enumerable.Range(0, 8).Select(_ => Task.Run(async () =>
        {
            for (var i = 0; i < 2_000; i++)
            {
                var lease = await pool.AcquireAsync();
                var now = holders.AddOrUpdate(lease.Channel, 1, (_, n) => n + 1);
                InterlockedMax(ref most, now);
                holders.AddOrUpdate(lease.Channel, 0, (_, n) => n - 1);
                lease.Release();
            }
        }))).Within();

        Assert.That(most, Is.InRange(1, 3));
        await UntilQuiet(pool);
        var snapshot = pool.GetSnapshot();
        Assert.That(snapshot is { Leased: 0, Waiting: 0 }, Is.True, $"{snapshot}");
        Assert.That(snapshot.Idle, Is.EqualTo(Factory.OpenChannels.Count));
    }

    [TestCase(0, "must be between 1 and 64")]
    [TestCase(65, "must be between 1 and 64")]
    public void MaxLeasesPerChannelOutOfRange_IsRefused_NamingTheOptionAndValue(int value, string rule)
    {
        var options = SmallPool();
        options.MaxLeasesPerChannel = value;

        Assert.That(
            () => CreatePool(options),
            Throws.TypeOf<OptionsValidationException>().With.Message.Contains("MaxLeasesPerChannel").And.Message.Contains(rule).And.Message.Contains($"it was {value}"));
    }

    [Test]
    public void SharingSingleUseChannels_IsRefused_WithTheReason()
    {
        var options = SmallPool();
        options.MaxLeasesPerChannel = 2;
        options.LeaseMode = LeaseMode.SingleUse;

        Assert.That(
            () => CreatePool(options),
            Throws.TypeOf<OptionsValidationException>().With.Message.Contains("MaxLeasesPerChannel must be 1 when LeaseMode is SingleUse").And.Message.Contains("it was 2"));
    }

    private DefaultChannelPool<FakeChannel> SharingPool(int leasesPerChannel, int poolSize, int maxChannels = 8)
    {
        var options = SmallPool(poolSize, maxChannels);
        options.MaxLeasesPerChannel = leasesPerChannel;

        // These tests are about sharing itself; adaptive sharing's own rule is in Sharing/AdaptiveSharingTests.
        options.LeaseSharing = LeaseSharing.Always;
        return CreatePool(options);
    }

    private static void InterlockedMax(ref int target, int value)
    {
        var current = Volatile.Read(ref target);
        while (value > current)
        {
            var seen = Interlocked.CompareExchange(ref target, value, current);
            if (seen == current)
            {
                return;
            }

            current = seen;
        }
    }
}
