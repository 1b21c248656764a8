using System.Diagnostics;
using System.Runtime.CompilerServices;
using Polly.CircuitBreaker;

namespace ChannelPool;

/// <summary>
/// The pool's state and its one owner: the counts, the idle and waiter queues, refill, the pause and backoff of opens,
/// the warm-up waiters, the drain, disposal and the settings, all behind one gate that nothing else takes.
/// </summary>
/// <remarks>
/// <para>
/// Every public member is a transition named by its domain word. It takes the gate, decides, checks the invariant,
/// leaves the gate, and returns what must happen next outside it: opens to start, a waiter to complete, channels to
/// close, a timer to arm. <see cref="DefaultChannelPool{TChannel}"/> does those things; it never changes a count. (This
/// is the pattern of Polly's <c>CircuitStateController</c>: decide under the lock, act outside it.)
/// </para>
/// <para>
/// The invariant: every channel the pool opened and has not finished closing is in exactly one place, idle, leased or
/// evicted (being closed), so <c>open = idle + leased + evicted</c> and <c>opened − closed = open</c>. Opens in flight
/// are not channels yet. Nobody waits while a lease could be had at once. After a drain began, nothing is idle.
/// <see cref="PoolInvariant"/> says when it is checked.
/// </para>
/// <para>
/// The transitions: <see cref="TryLease"/> (idle → leased, or a slot on a shared channel), <see cref="Release"/>
/// (leased → idle, → the oldest waiter, or → evicted), <see cref="EvictLeased"/> and <see cref="LeaveUnused"/> (what the
/// lease path found unfit), <see cref="Share"/>, <see cref="Enqueue"/> and <see cref="Abandon"/> for callers who wait,
/// <see cref="WarmUp"/>, <see cref="Opened"/> and <see cref="OpenFailed"/> (opening → idle, leased, or nothing),
/// <see cref="BreakerOpened"/>, <see cref="TakeWaitersRefusedByBreaker"/> and <see cref="Resume"/> for the breaker,
/// <see cref="FollowDemand"/> for the adaptive idle target, <see cref="EvictIdle"/> for the cleanup timer,
/// <see cref="Closed"/> (evicted → gone), <see cref="Reconfigure"/>, and <see cref="BeginDrain"/> and
/// <see cref="EvictOutstandingLeases"/> for shutdown.
/// </para>
/// </remarks>
internal sealed class PoolState<TChannel>
    where TChannel : class
{
    private static readonly TimeSpan MinOpenBackoff = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan MaxOpenBackoff = TimeSpan.FromSeconds(30);

    private readonly string _poolName;
    private readonly TimeProvider _timeProvider;
    private readonly PoolClock _clock;

    // Set for the pipeline the pool builds. A pipeline given in the options is opaque: for it the snapshot shows what
    // the pipeline last said, a rejection (open or isolated) or a channel (closed).
    private readonly CircuitBreakerStateProvider? _breakerStateProvider;

    // Everything below is guarded by _gate.
    private PoolGate _gate;
    private PoolSettings _settings;
    private readonly IdleQueue<TChannel> _idle;
    private readonly WaiterQueue<TChannel> _waiters = new();
    private readonly SharedLeases<TChannel> _shared = new();
    private readonly HashSet<PooledChannel<TChannel>> _open = [];
    private int _leasedCount;
    private int _openingCount;
    private int _evictedCount;
    private long _openedTotal;
    private long _closedTotal;

    // Set when the idle count reaches the refill threshold (or a warm-up, reload or failed open asks for a fill);
    // cleared when the pool is full again. While set, the refill fills to the idle target rather than only for waiters.
    private bool _refilling;

    // The idle target in force and the refill threshold that goes with it: PoolSize and RefillThreshold when fixed,
    // moved by the controller when adaptive (IdleTarget/). Read without the gate by telemetry and the pool's properties.
    private int _idleTarget;
    private int _refillThreshold;
    private IdleTargetController? _adaptiveTarget;

    // Demand since the adaptive target's last tick: the peak of channels in use, and the channels leases used up. Kept
    // in both modes: one compare on the lease path costs less than asking which mode is on.
    private int _peakDemand;
    private int _usedUp;

    private bool _opensPaused;
    private long _resumeAt;
    private int _consecutiveOpenFailures;
    private BreakerState _lastBreakerVerdict;
    private List<(int Ready, TaskCompletionSource Done)>? _warmUpWaiters;

    private bool _disposed;
    private Task? _drainTask;
    private TaskCompletionSource? _leasesReturned;
    private TaskCompletionSource? _quiescent;

    public PoolState(string poolName, PoolSettings settings, TimeProvider timeProvider, PoolClock clock, CircuitBreakerStateProvider? breakerStateProvider)
    {
        _poolName = poolName;
        _settings = settings;
        _timeProvider = timeProvider;
        _clock = clock;
        _breakerStateProvider = breakerStateProvider;
        _idle = new IdleQueue<TChannel>(settings.MaxChannels);
        FollowIdleTargetSettings_NoLock(settings);
    }

    /// <summary>Gets the settings in force; read without the gate, for what is decided outside it.</summary>
    public PoolSettings Settings => Volatile.Read(ref _settings);

    /// <summary>Gets the idle target in force; read without the gate.</summary>
    public int IdleTarget => Volatile.Read(ref _idleTarget);

    /// <summary>Gets the refill threshold in force, which follows the idle target; read without the gate.</summary>
    public int RefillThreshold => Volatile.Read(ref _refillThreshold);

    /// <summary>Gets whether a drain began; read without the gate.</summary>
    public bool IsDisposed => Volatile.Read(ref _disposed);

    /// <summary>Gets the breaker's state as the pool follows it: Polly's own, or what a custom pipeline last showed.</summary>
    public BreakerState BreakerState => _breakerStateProvider is { } provider
        ? provider.CircuitState switch
        {
            CircuitState.Open => BreakerState.Open,
            CircuitState.HalfOpen => BreakerState.HalfOpen,
            CircuitState.Isolated => BreakerState.Isolated,
            _ => BreakerState.Closed,
        }
        : _lastBreakerVerdict;

    public ChannelPoolSnapshot Snapshot()
    {
        _gate.Enter();
        var snapshot = Snapshot_NoLock();
        _gate.Exit();
        return snapshot;
    }

    // ---- Leasing: the hot path ----

    /// <summary>
    /// A new lease without waiting: a free slot on a shared channel, else idle → leased, taking an idle channel in the
    /// configured <see cref="IdleOrder"/>. Also starts a refill when the idle count reaches the threshold.
    /// </summary>
    /// <returns>The claim; its <see cref="LeaseClaim.Entry"/> is <see langword="null"/> when nothing is free.</returns>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public LeaseClaim TryLease()
    {
        _gate.Enter();
        if (_shared.Count > 0)
        {
            var joined = TryJoin_NoLock();
            if (joined.Entry is not null)
            {
                return joined;
            }
        }

        var settings = _settings;
        if (!_idle.TryTake(settings.IdleOrder, out var entry))
        {
            _gate.Exit();
            return default;
        }

        _leasedCount++;

        // A new peak above an adaptive target raises it now, not at the next tick: demand is growing.
        var risen = false;
        if (_leasedCount > _peakDemand)
        {
            _peakDemand = _leasedCount;
            risen = _leasedCount > _idleTarget && _adaptiveTarget is not null;
        }

        entry.IsBroken = false;
        var kind = LeaseKind.Idle;
        if (entry.Shared is { } shared)
        {
            shared.BusySlots = 1;
            if (settings.MaxLeasesPerChannel > 1)
            {
                kind = LeaseKind.IdleShareable;
            }
        }

        var opens = (_idle.Count <= _refillThreshold && !_refilling) || risen ? Refill_NoLock() : 0;
        Exit(nameof(TryLease));
        return new LeaseClaim(entry, 0, kind, opens);
    }

    /// <summary>
    /// One lease ends: leased → idle (or back to its other leases), → the oldest waiter, or → evicted when
    /// <paramref name="reason"/> (judged outside the gate, from the factory's verdict) or the pool's rules say it must
    /// go. A stale or repeated release, whose <paramref name="version"/> no longer matches, changes nothing.
    /// </summary>
    public ReleaseOutcome Release(PooledChannel<TChannel> entry, int slot, int version, EvictionReason? reason)
    {
        _gate.Enter();
        ref var lease = ref entry.SlotAt(slot);

        // Of two racing releases of one lease, exactly one gets past here; a stale lease never does.
        if (lease.Version != version)
        {
            _gate.Exit();
            return default;
        }

        lease.Version = version + 1;
        var settings = _settings;
        if (reason is null && entry.Shared is null && settings.LeaseMode == LeaseMode.Reuse && entry.EvictAfter > _clock.Now
            && !_disposed && _waiters.Count == 0)
        {
            // The common case, kept small enough to inline: a healthy channel with one lease back to idle.
            _leasedCount--;
            _idle.Enqueue(entry);
            Exit(nameof(Release));
            return new ReleaseOutcome(ReleaseKind.Kept, waiter: null, opens: 0, reason: default);
        }

        return ReleaseOther_NoLock(entry, slot, reason);
    }

    /// <summary>The rest of <see cref="Release"/>, under its gate: a shared channel, a waiter, or a channel that must go.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private ReleaseOutcome ReleaseOther_NoLock(PooledChannel<TChannel> entry, int slot, EvictionReason? reason)
    {
        var settings = _settings;
        reason ??= settings.LeaseMode == LeaseMode.SingleUse ? EvictionReason.SingleUse
            : entry.EvictAfter <= _clock.Now ? EvictionReason.LifetimeExpired
            : entry.Shared?.RetireReason;
        if (reason is null && !_disposed)
        {
            if (_waiters.Count == 0)
            {
                // Back to idle, or to its other leases.
                if (entry.Shared is null || _shared.Release(entry, slot, settings.MaxLeasesPerChannel, _waiters))
                {
                    _leasedCount--;
                    _idle.Enqueue(entry);
                }

                Exit(nameof(Release));
                return new ReleaseOutcome(ReleaseKind.Kept, waiter: null, opens: 0, reason: default);
            }

            // Handed straight to the oldest waiter: the slot stays leased.
            var waiter = _waiters.Dequeue();
            Exit(nameof(Release));
            return new ReleaseOutcome(ReleaseKind.HandedOver, waiter, opens: 0, reason: default);
        }

        var why = reason ?? EvictionReason.Shutdown;
        var evicted = Leave_NoLock(entry, slot, why);
        var opens = evicted ? Refill_NoLock() : 0;
        Exit(nameof(Release));
        return new ReleaseOutcome(evicted ? ReleaseKind.Evicted : ReleaseKind.Left, waiter: null, opens, why);
    }

    /// <summary>Leased → evicted, for a channel the lease path took but found expired or unusable. Returns opens to start.</summary>
    public int EvictLeased(PooledChannel<TChannel> entry)
    {
        _gate.Enter();
        EvictLeased_NoLock(entry);
        var opens = Refill_NoLock();
        Exit(nameof(EvictLeased));
        return opens;
    }

    /// <summary>
    /// Gives back a slot the lease path claimed on a shared channel but found unusable: the channel is retired, and
    /// evicted if that was its last lease. Returns whether it was evicted, and opens to start.
    /// </summary>
    public (bool Evicted, int Opens) LeaveUnused(PooledChannel<TChannel> entry, int slot, EvictionReason reason)
    {
        _gate.Enter();
        var evicted = Leave_NoLock(entry, slot, reason);
        var opens = evicted ? Refill_NoLock() : 0;
        Exit(nameof(LeaveUnused));
        return (evicted, opens);
    }

    /// <summary>
    /// Leased → leased and shared: lets <paramref name="entry"/>, just leased from idle and checked, take more leases,
    /// first from the waiters, who are returned with their slots.
    /// </summary>
    public List<(Waiter<TChannel> Waiter, int Slot)>? Share(PooledChannel<TChannel> entry)
    {
        _gate.Enter();
        var joiners = _disposed ? null : _shared.Share(entry, _settings.MaxLeasesPerChannel, _waiters);
        Exit(nameof(Share));
        return joiners;
    }

    /// <summary>
    /// A caller with no channel starts waiting, first come first served, and opens may start for it. Or it must not
    /// wait: the pool is disposed, or the breaker stops opens; or it need not: a lease became free since it looked.
    /// </summary>
    public EnqueueOutcome Enqueue(Waiter<TChannel> waiter)
    {
        _gate.Enter();
        EnqueueOutcome outcome;
        if (_disposed)
        {
            outcome = new EnqueueOutcome(EnqueueKind.Disposed, 0, default, null);
        }
        else if (_idle.Count > 0 || _shared.Count > 0)
        {
            outcome = new EnqueueOutcome(EnqueueKind.LeaseFree, 0, default, null);
        }
        else if (RefusesWaiters_NoLock())
        {
            outcome = new EnqueueOutcome(EnqueueKind.Refused, 0, Snapshot_NoLock(), RemainingPause_NoLock());
        }
        else
        {
            // Queued under the same gate that release takes, so a channel released from here on finds this waiter.
            _waiters.Enqueue(waiter);
            _peakDemand = Math.Max(_peakDemand, Demand_NoLock());
            outcome = new EnqueueOutcome(EnqueueKind.Queued, Refill_NoLock(), default, null);
        }

        Exit(nameof(Enqueue));
        return outcome;
    }

    /// <summary>
    /// A caller stops waiting (timeout or cancellation) before a channel reached it. Returns the counts including the
    /// caller and the acquire timeout, or <see langword="null"/> when a channel already reached it.
    /// </summary>
    public (ChannelPoolSnapshot Snapshot, TimeSpan Timeout)? Abandon(Waiter<TChannel> waiter)
    {
        _gate.Enter();
        if (!waiter.IsQueued)
        {
            _gate.Exit();
            return null;
        }

        var snapshot = Snapshot_NoLock();
        _waiters.Remove(waiter);
        var timeout = _settings.AcquireTimeout;
        Exit(nameof(Abandon));
        return (snapshot, timeout);
    }

    // ---- Opening ----

    /// <summary>
    /// Starts filling to PoolSize whatever the threshold says; an adaptive target rises to PoolSize for a window. Returns
    /// opens to start, and a task to wait on when fewer than <paramref name="readyChannels"/> channels are open.
    /// </summary>
    /// <exception cref="ObjectDisposedException">A drain began.</exception>
    public (int Opens, TaskCompletionSource? Done) WarmUp(int readyChannels)
    {
        _gate.Enter();
        if (_disposed)
        {
            _gate.Exit();
            throw new ObjectDisposedException(typeof(DefaultChannelPool<TChannel>).FullName, $"Channel pool '{_poolName}' is disposed.");
        }

        if (_adaptiveTarget is { } adaptive)
        {
            SetIdleTarget_NoLock(adaptive.RaiseTo(_settings.PoolSize));
        }

        var opens = Refill_NoLock(toPoolSize: true);
        TaskCompletionSource? done = null;
        if (_idle.Count + _leasedCount < readyChannels)
        {
            done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            (_warmUpWaiters ??= []).Add((readyChannels, done));
        }

        Exit(nameof(WarmUp));
        return (opens, done);
    }

    /// <summary>
    /// Opening → idle; or leased by the oldest waiter (and, on a channel that takes several leases, by as many more
    /// waiters as it can take); or evicted, when a drain began. The server answered, so the backoff ends.
    /// </summary>
    /// <param name="entry">The channel.</param>
    /// <param name="openTime">How long the open took across its attempts, for the adaptive target.</param>
    public OpenedOutcome Opened(PooledChannel<TChannel> entry, TimeSpan openTime)
    {
        _gate.Enter();
        _adaptiveTarget?.RecordOpenTime(openTime);
        _lastBreakerVerdict = BreakerState.Closed;
        if (BreakerState == BreakerState.Closed)
        {
            _consecutiveOpenFailures = 0;
            _opensPaused = false;
        }

        var settings = _settings;
        entry.ScheduleExpiry(_clock.ToTimestampDelta(settings.ChannelLifetime), settings.LifetimeJitter, _clock.EvictionMargin(settings.ChannelLifetime));
        _openingCount--;
        _openedTotal++;
        _open.Add(entry);
        if (_disposed)
        {
            MarkEvicted_NoLock(entry);
            Exit(nameof(Opened));
            return new OpenedOutcome(Evicted: true, null, null, null, 0);
        }

        var waiter = _waiters.Dequeue();
        List<(Waiter<TChannel> Waiter, int Slot)>? joiners = null;
        if (waiter is null)
        {
            _idle.Enqueue(entry);
        }
        else
        {
            _leasedCount++;
            if (entry.Shared is { } shared)
            {
                shared.BusySlots = 1;
                joiners = _shared.Share(entry, settings.MaxLeasesPerChannel, _waiters);
            }
        }

        var warmedUp = TakeFinishedWarmUps_NoLock();
        var opens = Refill_NoLock();
        Exit(nameof(Opened));
        return new OpenedOutcome(Evicted: false, waiter, joiners, warmedUp, opens);
    }

    /// <summary>
    /// Opening → nothing. Turned away by the breaker, opens pause for the break it names; given up on by the pipeline
    /// while the breaker stays closed, they pause with exponential backoff. Either way the refill keeps going once
    /// opens resume.
    /// </summary>
    public OpenFailedOutcome OpenFailed(Exception error)
    {
        _gate.Enter();
        _openingCount--;
        if (_disposed)
        {
            Exit(nameof(OpenFailed));
            return default;
        }

        TimeSpan? pause = null;
        var turnedAway = false;
        var failures = 0;
        if (error is BrokenCircuitException or IsolatedCircuitException)
        {
            turnedAway = true;
            _lastBreakerVerdict = error is IsolatedCircuitException ? BreakerState.Isolated : BreakerState.Open;
            pause = PauseOpens_NoLock((error as BrokenCircuitException)?.RetryAfter ?? _settings.BreakDuration);
        }
        else if (!_opensPaused && BreakerState == BreakerState.Closed)
        {
            // Without a pause the refill would start the next open at once, in a tight loop, for as long as the
            // breaker's minimum throughput is not reached.
            failures = ++_consecutiveOpenFailures;
            var backoff = _settings.RetryBaseDelay * Math.Pow(2, Math.Min(failures - 1, 10));
            backoff = backoff < MinOpenBackoff ? MinOpenBackoff : backoff > MaxOpenBackoff ? MaxOpenBackoff : backoff;
            pause = PauseOpens_NoLock(backoff);
        }

        var opens = Refill_NoLock(toPoolSize: true);
        Exit(nameof(OpenFailed));
        return new OpenFailedOutcome(pause, turnedAway, failures, opens);
    }

    // ---- Following the breaker ----

    /// <summary>
    /// The breaker opened: opens pause for <paramref name="breakDuration"/>, and the fill resumes after it. Returns the
    /// pause to arm the resume timer with, or <see langword="null"/> when a drain began.
    /// </summary>
    public TimeSpan? BreakerOpened(TimeSpan breakDuration)
    {
        _gate.Enter();
        if (_disposed)
        {
            _gate.Exit();
            return null;
        }

        var pause = PauseOpens_NoLock(breakDuration);

        // Nothing starts while paused; this only marks the fill that resumes after the break.
        _ = Refill_NoLock(toPoolSize: true);
        Exit(nameof(BreakerOpened));
        return pause;
    }

    /// <summary>
    /// Waiting callers (when nothing is idle) and pending warm-ups stop waiting, to be failed fast while the breaker
    /// stops opens, rather than each sitting out its timeout. Returns them with the counts to report.
    /// </summary>
    public (List<Waiter<TChannel>>? Waiters, List<(int Ready, TaskCompletionSource Done)>? WarmUps, ChannelPoolSnapshot Snapshot) TakeWaitersRefusedByBreaker()
    {
        _gate.Enter();
        var waiters = _idle.Count == 0 && _waiters.Count > 0 ? _waiters.DequeueAll() : null;
        var warmUps = _warmUpWaiters;
        _warmUpWaiters = null;
        var snapshot = Snapshot_NoLock();
        Exit(nameof(TakeWaitersRefusedByBreaker));
        return (waiters, warmUps, snapshot);
    }

    /// <summary>
    /// The resume timer fired: lifts a pause that is over and refills. If the breaker is open, the next open reaches
    /// Polly after the break, and Polly half-opens and lets it through as its probe.
    /// </summary>
    /// <returns>What happened: nothing to do, resumed with opens to start, or the pause runs on for a while yet.</returns>
    public (bool Resumed, int Opens, TimeSpan? RunsOnFor) Resume()
    {
        _gate.Enter();
        if (_disposed || !_opensPaused)
        {
            _gate.Exit();
            return (false, 0, null);
        }

        // A later pause may have pushed the resume time out after this timer was armed.
        if (RemainingPause_NoLock() is { } remaining && remaining > TimeSpan.Zero)
        {
            _gate.Exit();
            return (false, 0, remaining);
        }

        _opensPaused = false;
        var opens = Refill_NoLock();
        Exit(nameof(Resume));
        return (true, opens, null);
    }

    // ---- The idle target ----

    /// <summary>
    /// The adaptive target's tick: the demand seen since the last one closes a bucket of its window, the target moves
    /// (up at once, down by its half-life; held while the breaker or a backoff stops opens), and the refill follows the
    /// new threshold. Returns the move and opens to start; nothing when the target is fixed or a drain began.
    /// </summary>
    public IdleTargetMove FollowDemand()
    {
        _gate.Enter();
        if (_disposed || _adaptiveTarget is not { } adaptive)
        {
            _gate.Exit();
            return default;
        }

        var from = _idleTarget;
        var hold = _opensPaused || BreakerState != BreakerState.Closed;
        SetIdleTarget_NoLock(adaptive.Tick(_peakDemand, _usedUp, hold));
        _peakDemand = Demand_NoLock();
        _usedUp = 0;
        var move = new IdleTargetMove(from, _idleTarget, adaptive.WindowPeak, adaptive.Flow, Refill_NoLock());
        Exit(nameof(FollowDemand));
        return move;
    }

    // ---- Eviction ----

    /// <summary>Copies the idle channels out, oldest first, for the cleanup timer to inspect outside the gate.</summary>
    /// <returns>The idle channels, or <see langword="null"/> when there are none or a drain began.</returns>
    public PooledChannel<TChannel>[]? IdleChannels()
    {
        _gate.Enter();
        var idle = _disposed || _idle.Count == 0 ? null : _idle.ToArray();
        _gate.Exit();
        return idle;
    }

    /// <summary>Idle → evicted for the idle channels <paramref name="evict"/> picks. Returns them, and opens to start.</summary>
    public (List<PooledChannel<TChannel>> Evicted, int Opens) EvictIdle(Func<PooledChannel<TChannel>, bool> evict)
    {
        _gate.Enter();

        // Only channels still idle go; one leased meanwhile is checked again on its own lease path.
        var evicted = _idle.RemoveAll(evict);
        evicted.ForEach(MarkEvicted_NoLock);
        var opens = Refill_NoLock();
        Exit(nameof(EvictIdle));
        return (evicted, opens);
    }

    /// <summary>Evicted → gone: the close or abort finished.</summary>
    public void Closed(PooledChannel<TChannel> entry)
    {
        _gate.Enter();
        _evictedCount--;
        _closedTotal++;
        _open.Remove(entry);
        Exit(nameof(Closed));
    }

    // ---- Reconfiguration and shutdown ----

    /// <summary>
    /// New settings apply: deadlines of open channels move with the lifetime, and a pool larger than its open and
    /// opening channels refills now. Returns opens to start.
    /// </summary>
    /// <exception cref="ObjectDisposedException">A drain began.</exception>
    public int Reconfigure(PoolSettings settings)
    {
        _gate.Enter();
        if (_disposed)
        {
            _gate.Exit();
            throw new ObjectDisposedException(typeof(DefaultChannelPool<TChannel>).FullName, $"Channel pool '{_poolName}' is disposed.");
        }

        Volatile.Write(ref _settings, settings);
        FollowIdleTargetSettings_NoLock(settings);
        var lifetime = _clock.ToTimestampDelta(settings.ChannelLifetime);
        var margin = _clock.EvictionMargin(settings.ChannelLifetime);
        foreach (var entry in _open)
        {
            entry.ScheduleExpiry(lifetime, settings.LifetimeJitter, margin);
        }

        var opens = Refill_NoLock(toPoolSize: _idle.Count + _leasedCount + _openingCount < _idleTarget);
        Exit(nameof(Reconfigure));
        return opens;
    }

    /// <summary>
    /// The drain begins, once: the pool is disposed, idle channels are evicted, nobody joins a shared channel any more,
    /// and waiters and warm-ups stop waiting. Returns them to fail and close, or <see langword="null"/> with the
    /// existing drain's task when a drain already began.
    /// </summary>
    public DrainStart BeginDrain()
    {
        _gate.Enter();
        if (_drainTask is not null)
        {
            _gate.Exit();
            return new DrainStart(_drainTask, null, [], [], null, 0, Task.CompletedTask, Task.CompletedTask);
        }

        _disposed = true;
        var drained = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _drainTask = drained.Task;
        _leasesReturned = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _quiescent = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        var idle = _idle.RemoveAll(static _ => true);
        idle.ForEach(MarkEvicted_NoLock);
        _shared.StopSharing();
        var waiters = _waiters.DequeueAll();
        var warmUps = _warmUpWaiters;
        _warmUpWaiters = null;
        var start = new DrainStart(drained.Task, drained, idle, waiters, warmUps, _leasedCount, _leasesReturned.Task, _quiescent.Task);
        Exit(nameof(BeginDrain));
        return start;
    }

    /// <summary>
    /// Leased → evicted for every lease still out at the end of a drain. The idle queue was emptied when the drain
    /// began and nothing re-enters it, so an open channel not yet evicted is leased. Its leases go stale, so the
    /// holders' later releases do nothing.
    /// </summary>
    public List<PooledChannel<TChannel>> EvictOutstandingLeases()
    {
        _gate.Enter();
        List<PooledChannel<TChannel>> abandoned = [];
        foreach (var entry in _open)
        {
            if (!entry.IsEvicted)
            {
                SharedLeases<TChannel>.InvalidateLeases(entry);
                abandoned.Add(entry);
            }
        }

        abandoned.ForEach(EvictLeased_NoLock);
        Exit(nameof(EvictOutstandingLeases));
        return abandoned;
    }

    // ---- Under the gate ----

    /// <summary>A free slot on a shared channel; leaves the gate when it found one, and holds it when not.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private LeaseClaim TryJoin_NoLock()
    {
        var settings = _settings;
        if (!_shared.TryJoin(settings.MaxLeasesPerChannel, _clock.Now, out var entry, out var slot))
        {
            return default;
        }

        var opens = _idle.Count <= _refillThreshold && !_refilling ? Refill_NoLock() : 0;
        Exit(nameof(TryLease));
        return new LeaseClaim(entry, slot, LeaseKind.Joined, opens);
    }

    private ChannelPoolSnapshot Snapshot_NoLock() => new(
        _idle.Count, _leasedCount, _openingCount, _evictedCount, _waiters.Count, BreakerState, _openedTotal, _closedTotal)
    {
        IdleTarget = _idleTarget,
    };

    /// <summary>
    /// Nothing → opening: decides how many opens to start now and counts them. The rule: once the idle count falls to
    /// the refill threshold, fill back up to the idle target (<see cref="IdleTarget_NoLock"/>) plus one channel per
    /// waiting caller; waiting callers alone also get opens. Never above MaxChannels and never more than
    /// MaxConcurrentOpens in flight. Nothing while opens are paused, and one at a time while the breaker is not closed:
    /// Polly lets it through as its probe once the break is over, or turns it away.
    /// </summary>
    /// <param name="toPoolSize">Fill to the idle target whatever the threshold says (a warm-up, a reload, a failed open).</param>
    private int Refill_NoLock(bool toPoolSize = false)
    {
        if (toPoolSize)
        {
            _refilling = true;
        }

        if (_disposed || _opensPaused)
        {
            return 0;
        }

        var settings = _settings;
        var target = IdleTarget_NoLock();
        var idle = _idle.Count;
        if (!_refilling && idle <= _refillThreshold)
        {
            _refilling = true;
        }

        var wanted = (_refilling ? target : 0) + _waiters.Count - idle - _openingCount;
        if (wanted <= 0)
        {
            _refilling = false;
            return 0;
        }

        var room = settings.MaxChannels - (idle + _leasedCount + _openingCount);
        var count = Math.Min(wanted, Math.Min(room, settings.MaxConcurrentOpens - _openingCount));
        if (count > 0 && BreakerState != BreakerState.Closed)
        {
            count = _openingCount == 0 ? 1 : 0;
        }

        if (count <= 0)
        {
            return 0;
        }

        _openingCount += count;
        return count;
    }

    /// <summary>
    /// The pool's idle target: the idle count a refill fills back up to, and what the pool keeps idle when nothing else
    /// asks for more. PoolSize when fixed; when adaptive, the controller's target, first raised to what the demand since
    /// its last tick wants, so the target rises at the refill that needs it rather than at the next tick.
    /// </summary>
    private int IdleTarget_NoLock()
    {
        if (_adaptiveTarget is { } adaptive)
        {
            var target = adaptive.Raise(_peakDemand);
            if (target != _idleTarget)
            {
                SetIdleTarget_NoLock(target);
            }
        }

        return _idleTarget;
    }

    /// <summary>Channels in use: leased, and enough for the waiting callers, several to a channel when leases share.</summary>
    private int Demand_NoLock()
    {
        var perChannel = _settings.MaxLeasesPerChannel;
        return _leasedCount + ((_waiters.Count + perChannel - 1) / perChannel);
    }

    private void SetIdleTarget_NoLock(int target)
    {
        Volatile.Write(ref _idleTarget, target);
        Volatile.Write(ref _refillThreshold, _settings.RefillThresholdFor(target));
    }

    /// <summary>Follows the idle target's settings: PoolSize when fixed; a controller, kept across reloads, when adaptive.</summary>
    private void FollowIdleTargetSettings_NoLock(PoolSettings settings)
    {
        if (settings.IdleTarget.Mode == IdleTargetMode.Fixed)
        {
            _adaptiveTarget = null;
            SetIdleTarget_NoLock(settings.PoolSize);
            return;
        }

        var target = _adaptiveTarget?.Reconfigure(settings.IdleTarget, settings.MaxChannels);
        if (target is null)
        {
            _adaptiveTarget = new IdleTargetController(settings.IdleTarget, settings.MaxChannels, settings.PoolSize, _timeProvider);
            target = _adaptiveTarget.Target;
        }

        SetIdleTarget_NoLock(target.Value);
    }

    /// <summary>
    /// One lease ends on a channel that must go: the channel is evicted when it was the last lease, or retired, taking no
    /// more, while others still hold it. Returns whether it was evicted.
    /// </summary>
    private bool Leave_NoLock(PooledChannel<TChannel> entry, int slot, EvictionReason reason)
    {
        if (entry.Shared is not null && !_shared.Leave(entry, slot, reason))
        {
            return false;
        }

        EvictLeased_NoLock(entry);
        return true;
    }

    /// <summary>Leased → evicted, whatever leases it still carried: a channel a lease used up.</summary>
    private void EvictLeased_NoLock(PooledChannel<TChannel> entry)
    {
        _shared.Evict(entry);
        _leasedCount--;
        _usedUp++;
        MarkEvicted_NoLock(entry);
    }

    private void MarkEvicted_NoLock(PooledChannel<TChannel> entry)
    {
        entry.IsEvicted = true;
        _evictedCount++;
    }

    private List<TaskCompletionSource>? TakeFinishedWarmUps_NoLock()
    {
        if (_warmUpWaiters is null)
        {
            return null;
        }

        var open = _idle.Count + _leasedCount;
        List<TaskCompletionSource>? finished = null;
        _warmUpWaiters.RemoveAll(warmUp =>
        {
            if (warmUp.Ready > open)
            {
                return false;
            }

            (finished ??= []).Add(warmUp.Done);
            return true;
        });
        return finished;
    }

    /// <summary>
    /// Whether a caller finding no idle channel is refused at once rather than queued: the breaker stops opens and the
    /// break is not over. Once it is, the probe is about to go out, and the caller may wait for it.
    /// </summary>
    private bool RefusesWaiters_NoLock() => BreakerState switch
    {
        BreakerState.Isolated => true,
        BreakerState.Open => _opensPaused,
        _ => false,
    };

    /// <summary>Stops new opens until <paramref name="delay"/> from now; returns the delay to arm the resume timer with.</summary>
    private TimeSpan PauseOpens_NoLock(TimeSpan delay)
    {
        var resumeAt = _timeProvider.GetTimestamp() + _clock.ToTimestampDelta(delay);
        _resumeAt = _opensPaused ? Math.Max(_resumeAt, resumeAt) : resumeAt;
        _opensPaused = true;
        return RemainingPause_NoLock() ?? TimeSpan.Zero;
    }

    private TimeSpan? RemainingPause_NoLock()
    {
        if (!_opensPaused)
        {
            return null;
        }

        var remaining = _timeProvider.GetElapsedTime(_timeProvider.GetTimestamp(), _resumeAt);
        return remaining > TimeSpan.Zero ? remaining : TimeSpan.Zero;
    }

    /// <summary>
    /// Leaves the gate after a transition that may have changed the counts: reports drain progress, and checks the
    /// invariant where <see cref="PoolInvariant.IsChecked"/> says so.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Exit(string transition)
    {
        if (_disposed || PoolInvariant.IsChecked)
        {
            ExitChecked(transition);
            return;
        }

        _gate.Exit();
    }

    // The gate is left before a violation throws, so the failing test fails rather than hangs on the pool.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ExitChecked(string transition)
    {
        if (_disposed)
        {
            UpdateDrainProgress_NoLock();
        }

        var violation = PoolInvariant.IsChecked ? FindViolation_NoLock() : null;
        _gate.Exit();
        if (violation is not null)
        {
            Debug.Fail(violation);
            throw new InvalidOperationException($"Channel pool '{_poolName}' broke its invariant in {transition}: {violation}. This is a bug in ChannelPool.");
        }
    }

    private void UpdateDrainProgress_NoLock()
    {
        if (_leasedCount == 0)
        {
            _leasesReturned?.TrySetResult();
            if (_openingCount == 0 && _evictedCount == 0)
            {
                _quiescent?.TrySetResult();
            }
        }
    }

    private string? FindViolation_NoLock()
    {
        if (_leasedCount < 0 || _openingCount < 0 || _evictedCount < 0)
        {
            return $"a count is negative ({Snapshot_NoLock()})";
        }

        if (_open.Count != _idle.Count + _leasedCount + _evictedCount)
        {
            return $"open ({_open.Count}) != idle ({_idle.Count}) + leased ({_leasedCount}) + evicted ({_evictedCount})";
        }

        if (_openedTotal - _closedTotal != _open.Count)
        {
            return $"opened ({_openedTotal}) - closed ({_closedTotal}) != open ({_open.Count})";
        }

        if (_waiters.Count > 0 && (_idle.Count > 0 || _shared.Count > 0))
        {
            return $"{_waiters.Count} caller(s) wait while {_idle.Count} channel(s) idle and {_shared.Count} shared channel(s) have room";
        }

        if (_disposed && (_idle.Count > 0 || _shared.Count > 0 || _warmUpWaiters is not null))
        {
            return "a channel idles, a shared channel takes leases or a warm-up waits after the drain began";
        }

        return null;
    }

    /// <summary>What <see cref="TryLease"/> claimed: a channel and slot, and the opens it started.</summary>
    internal readonly struct LeaseClaim(PooledChannel<TChannel>? entry, int slot, LeaseKind kind, int opens)
    {
        // Laid out to fit two registers, so the hot path returns it without going through memory.
        public readonly PooledChannel<TChannel>? Entry = entry;
        public readonly int Opens = opens;
        public readonly byte Slot = (byte)slot;
        public readonly LeaseKind Kind = kind;
    }

    /// <summary>What <see cref="Release"/> decided.</summary>
    internal readonly struct ReleaseOutcome(ReleaseKind kind, Waiter<TChannel>? waiter, int opens, EvictionReason reason)
    {
        /// <summary>The waiter the slot went to, for <see cref="ReleaseKind.HandedOver"/>.</summary>
        public readonly Waiter<TChannel>? Waiter = waiter;
        public readonly int Opens = opens;
        public readonly ReleaseKind Kind = kind;
        private readonly byte _reason = (byte)reason;

        /// <summary>Gets why the channel goes, for <see cref="ReleaseKind.Evicted"/> and <see cref="ReleaseKind.Left"/>.</summary>
        public EvictionReason Reason => (EvictionReason)_reason;
    }

    /// <summary>What <see cref="Opened"/> decided: the waiter and joiners to complete, warm-ups that are done, opens.</summary>
    internal readonly record struct OpenedOutcome(
        bool Evicted,
        Waiter<TChannel>? Waiter,
        List<(Waiter<TChannel> Waiter, int Slot)>? Joiners,
        List<TaskCompletionSource>? WarmedUp,
        int Opens);

    /// <summary>
    /// What <see cref="BeginDrain"/> handed over: what to fail and close, and the tasks to wait on. Its
    /// <c>Drained</c> source completes the drain, and is <see langword="null"/> when a drain had already begun.
    /// </summary>
    internal sealed record DrainStart(
        Task Drain,
        TaskCompletionSource? Drained,
        List<PooledChannel<TChannel>> Idle,
        List<Waiter<TChannel>> Waiters,
        List<(int Ready, TaskCompletionSource Done)>? WarmUps,
        int Leased,
        Task LeasesReturned,
        Task Quiescent);
}

/// <summary>
/// Says whether <see cref="PoolState{TChannel}"/> checks its invariant after every transition. Debug builds always do;
/// a release build does when the <c>ChannelPool.CheckInvariants</c> <see cref="AppContext"/> switch is on, as the
/// engine's tests turn it on, so the check runs in the Release build CI tests. Off, the JIT folds it away.
/// </summary>
internal static class PoolInvariant
{
    public const string SwitchName = "ChannelPool.CheckInvariants";

#if DEBUG
    public static readonly bool IsChecked = true;
#else
    public static readonly bool IsChecked = AppContext.TryGetSwitch(SwitchName, out var on) && on;
#endif
}

/// <summary>How a lease was claimed.</summary>
internal enum LeaseKind : byte
{
    /// <summary>Nothing was free.</summary>
    None,

    /// <summary>An idle channel, now leased on its slot 0.</summary>
    Idle,

    /// <summary>An idle channel that may take more leases once it is checked (see <see cref="PoolState{TChannel}.Share"/>).</summary>
    IdleShareable,

    /// <summary>A free slot on a channel other leases hold.</summary>
    Joined,
}

/// <summary>How a release ended.</summary>
internal enum ReleaseKind : byte
{
    /// <summary>The lease was already released; nothing changed.</summary>
    Stale,

    /// <summary>The channel went back to idle, or stays with its other leases.</summary>
    Kept,

    /// <summary>The slot went to a waiter, to be completed.</summary>
    HandedOver,

    /// <summary>The channel was evicted, to be closed.</summary>
    Evicted,

    /// <summary>The channel must go, but other leases still hold it: it takes no more, and their last release evicts it.</summary>
    Left,
}

/// <summary>How a caller's attempt to wait ended.</summary>
internal enum EnqueueKind
{
    /// <summary>It waits.</summary>
    Queued,

    /// <summary>A lease became free since it looked: it takes that instead.</summary>
    LeaseFree,

    /// <summary>The pool is disposed.</summary>
    Disposed,

    /// <summary>The breaker stops opens: it fails fast.</summary>
    Refused,
}

/// <summary>What <see cref="PoolState{TChannel}.Enqueue"/> decided, with the counts and pause for a refusal.</summary>
internal readonly record struct EnqueueOutcome(EnqueueKind Kind, int Opens, ChannelPoolSnapshot Snapshot, TimeSpan? RetryAfter);

/// <summary>What <see cref="PoolState{TChannel}.FollowDemand"/> decided: the target before and after, what it followed, and opens.</summary>
internal readonly record struct IdleTargetMove(int From, int To, int WindowPeak, double Flow, int Opens);

/// <summary>What <see cref="PoolState{TChannel}.OpenFailed"/> decided: a pause to arm, whether waiters are failed fast, and opens.</summary>
internal readonly record struct OpenFailedOutcome(TimeSpan? Pause, bool TurnedAway, int Failures, int Opens);
