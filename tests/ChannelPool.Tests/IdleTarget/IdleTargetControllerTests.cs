namespace ChannelPool.Tests.IdleTarget;

/// <summary>
/// The adaptive rule on its own, on fake time: an eighth of a window per tick, as the pool's timer ticks it. The pool's
/// tests (<see cref="AdaptiveIdleTargetTests"/>) show the same rule driving real refills.
/// </summary>
public class IdleTargetControllerTests
{
    // A window of 80 s ticks every 10 s; a half-life of 20 s is two ticks.
    private static readonly IdleTargetSettings Settings = new(IdleTargetMode.Adaptive, Minimum: 2, Window: TimeSpan.FromSeconds(80), DecayHalfLife: TimeSpan.FromSeconds(20));
    private static readonly TimeSpan Tick = Settings.TickPeriod;

    private FakeTimeProvider _time = null!;

    [SetUp]
    public void CreateClock() => _time = new FakeTimeProvider();

    [Test]
    public void Controller_StartsAtTheGivenTarget_AndHoldsItForAWindow()
    {
        var controller = Controller(start: 50);

        var targets = Ticks(controller, count: 7, peakDemand: 1);

        Assert.That(controller.Target, Is.EqualTo(50));
        Assert.That(targets, Is.All.EqualTo(50), "the start counts as a window's demand, as a warm-up's does");
    }

    [Test]
    public void Raise_TakesTheTargetToThePeakDemandAtOnce()
    {
        var controller = Controller(start: 2);

        Assert.That(controller.Raise(peakDemand: 17), Is.EqualTo(17));
        Assert.That(controller.Target, Is.EqualTo(17), "before any tick: the rise is at the refill that sees the demand");
    }

    [Test]
    public void Tick_RisesWithinOneWindowOfASpike()
    {
        var controller = Controller(start: 2);
        ForgetTheStart(controller);

        _time.Advance(Tick);
        var target = controller.Tick(peakDemand: 30, usedUp: 0, hold: false);

        Assert.That(target, Is.EqualTo(30), "the tick that closes the spike's bucket, an eighth of a window later, holds it");
    }

    [Test]
    public void Tick_HoldsThePeakForTheWindow_ThenHalvesTheExcessEveryHalfLife()
    {
        var controller = Controller(start: 2);
        ForgetTheStart(controller);
        _time.Advance(Tick);
        controller.Tick(peakDemand: 42, usedUp: 0, hold: false);

        // Seven more ticks: the spike's bucket is still one of the window's eight.
        Assert.That(Ticks(controller, count: 7, peakDemand: 2), Is.All.EqualTo(42));

        // Then each tick of 10 s multiplies the excess over demand (40) by 2^(-10/20).
        var decay = Ticks(controller, count: 6, peakDemand: 2);

        Assert.That(decay, Is.EqualTo(new[] { 31, 22, 17, 12, 10, 7 }), "2 + 40 × 0.707, 2 + 20, 2 + 14.1, 2 + 10, 2 + 7.07, 2 + 5, rounded up");
    }

    [Test]
    public void Tick_DecaysToTheMinimum_AndNoFurther()
    {
        var controller = Controller(start: 60);

        var targets = Ticks(controller, count: 40, peakDemand: 0);

        Assert.That(targets[^1], Is.EqualTo(Settings.Minimum));
        Assert.That(targets, Is.All.GreaterThanOrEqualTo(Settings.Minimum));
        Assert.That(targets, Is.Ordered.Descending, "it never rises without demand");
    }

    [Test]
    public void Target_NeverExceedsMaxChannels()
    {
        var controller = Controller(start: 2, maxChannels: 20);
        controller.RecordOpenTime(TimeSpan.FromSeconds(1));

        Assert.That(controller.RaiseTo(400), Is.EqualTo(20), "a warm-up asking for more than MaxChannels");
        _time.Advance(Tick);
        Assert.That(controller.Tick(peakDemand: 4, usedUp: 10_000, hold: false), Is.EqualTo(20), "a flow of 1,000 channels used up while one opens");
        Assert.That(controller.Raise(peakDemand: 500), Is.EqualTo(20), "demand past MaxChannels, with that flow");
    }

    [Test]
    public void Raise_AtAPeak_CountsTheChannelsInUse_AndKeepsHalfTheRoomLeftForArrivals()
    {
        var controller = Controller(start: 2);
        ForgetTheStart(controller);

        // While a doubling fits under MaxChannels (126), the headroom is as many again as are in use.
        Assert.That(controller.Raise(peakDemand: 16), Is.EqualTo(16));
        Assert.That(controller.Raise(peakDemand: 32), Is.EqualTo(32));

        // At 64 in use a doubling cannot fit: half the 62 channels left, not a second peak of 64 idle on top.
        Assert.That(controller.Raise(peakDemand: 64), Is.EqualTo(31));
        Assert.That(controller.Raise(peakDemand: 126), Is.EqualTo(Settings.Minimum), "every channel in use: nothing more can open");
    }

    [Test]
    public void Tick_AtAPlateau_HoldsTheArrivalsShare_AndOnceCallersLeave_KeepsTheirChannelsIdle()
    {
        var controller = Controller(start: 2);
        ForgetTheStart(controller);
        controller.Raise(peakDemand: 64);

        // Ticks at the plateau: the lease count dipping between calls (60 since the last tick) is not callers gone.
        _time.Advance(Tick);
        Assert.That(controller.Tick(peakDemand: 64, usedUp: 0, hold: false), Is.EqualTo(31));
        Assert.That(controller.Raise(peakDemand: 60), Is.EqualTo(31));

        // Down to 1 caller: the 63 who left may come back, so their channels stay wanted for the window.
        Assert.That(Ticks(controller, count: 7, peakDemand: 1), Is.All.EqualTo(63 + 1));
        Assert.That(Ticks(controller, count: 1, peakDemand: 1), Is.EqualTo(new[] { 46 }), "then the peak held decays: 1 + 63 × 2^(-1/2), rounded up");
    }

    [Test]
    public void Minimum_AboveTheStart_IsWhereTheTargetStarts()
    {
        var controller = new IdleTargetController(Settings with { Minimum = 8 }, maxChannels: 126, start: 3, _time);

        Assert.That(controller.Target, Is.EqualTo(8));
    }

    [Test]
    public void Tick_WhileHeld_LeavesTheTarget_AndTheHeldTimeDoesNotCountTowardsTheDecay()
    {
        var controller = Controller(start: 2);
        ForgetTheStart(controller);
        _time.Advance(Tick);
        controller.Tick(peakDemand: 42, usedUp: 0, hold: false);

        // An hour with the breaker open: callers are turned away, so the demand seen is not what they need.
        for (var i = 0; i < 360; i++)
        {
            _time.Advance(Tick);
            Assert.That(controller.Tick(peakDemand: 0, usedUp: 0, hold: true), Is.EqualTo(42));
        }

        // Then the window runs on from where it stood: seven ticks still hold the spike, the next starts the decay.
        Assert.That(Ticks(controller, count: 7, peakDemand: 2), Is.All.EqualTo(42));
        Assert.That(Ticks(controller, count: 1, peakDemand: 2), Is.EqualTo(new[] { 31 }));
    }

    [Test]
    public void Tick_AddsTheChannelsUsedUpWhileOneOpens()
    {
        var controller = Controller(start: 2);
        ForgetTheStart(controller);
        foreach (var ms in new[] { 20, 40, 60, 80, 100, 120, 140, 160, 180, 400 })
        {
            controller.RecordOpenTime(TimeSpan.FromMilliseconds(ms));
        }

        // 300 channels used up in 10 s (single-use leases, say) is 30 a second; the open time's p90 is 180 ms.
        _time.Advance(Tick);
        var target = controller.Tick(peakDemand: 4, usedUp: 300, hold: false);

        Assert.That(controller.Flow, Is.EqualTo(30 * 0.18).Within(1e-9));
        Assert.That(target, Is.EqualTo(4 + 6), "peak demand plus 5.4 channels used up while one opens, rounded up");
    }

    [Test]
    public void Reconfigure_KeepsTheTarget_WithinTheNewBounds()
    {
        var controller = Controller(start: 40);

        Assert.That(controller.Reconfigure(Settings, maxChannels: 30), Is.EqualTo(30));
        Assert.That(controller.Reconfigure(Settings with { Minimum = 35 }, maxChannels: 126), Is.EqualTo(35));
    }

    private IdleTargetController Controller(int start, int maxChannels = 126) => new(Settings, maxChannels, start, _time);

    /// <summary>Ticks a whole window with no demand and lets the decay finish, so the start no longer counts.</summary>
    private void ForgetTheStart(IdleTargetController controller)
    {
        Ticks(controller, count: 40, peakDemand: 0);
        Assert.That(controller.Target, Is.EqualTo(Settings.Minimum));
    }

    private int[] Ticks(IdleTargetController controller, int count, int peakDemand) =>
        [.. Enumerable.Range(0, count).Select(_ =>
        {
            _time.Advance(Tick);
            return controller.Tick(peakDemand, usedUp: 0, hold: false);
        })];
}
