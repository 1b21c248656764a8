namespace ChannelPool;

/// <summary>
/// One address of a balanced pool: its own pool, and the counts the balancer decides by. The counts are kept with
/// interlocked operations on the lease path; every state change goes through the balanced pool's lock.
/// </summary>
internal sealed class PoolEndpoint<TChannel> : IEndpointObserver
    where TChannel : class
{
    private readonly BalancedChannelPool<TChannel> _owner;
    private int _inFlight;
    private int _consecutiveFailures;
    private long _calls;
    private long _failures;

    // A moving average of lease time (call time, for a lease per operation), in ticks; 0 until the first call. Written
    // by whichever release comes last, without a lock: a lost update only delays the average by one call.
    private long _averageTicks;

    // The outlier interval's calls and their summed lease time, taken and reset by each outlier check.
    private long _intervalCalls;
    private long _intervalTicks;
    private long _intervalFailures;

    public PoolEndpoint(BalancedChannelPool<TChannel> owner, PoolAddress address, DefaultChannelPool<TChannel> pool)
    {
        _owner = owner;
        Address = address;
        Pool = pool;
        pool.ObserveFor(this);
    }

    public PoolAddress Address { get; }

    public DefaultChannelPool<TChannel> Pool { get; }

    /// <summary>Written under the balanced pool's lock; read without it.</summary>
    public volatile EndpointState State;

    /// <summary>How many ejections the next ejection time counts from; under the balanced pool's lock.</summary>
    public int Ejections;

    /// <summary>When the ejection ends, as a TimeProvider timestamp; under the balanced pool's lock.</summary>
    public long EjectedUntil;

    /// <summary>When it was last let back in, as a TimeProvider timestamp (0 if never ejected); under the balanced pool's lock.</summary>
    public long ReadmittedAt;

    public int InFlight => Volatile.Read(ref _inFlight);

    /// <summary>Gets the moving average of this address's call time, in ticks; 0 before its first call.</summary>
    public long AverageTicks => Volatile.Read(ref _averageTicks);

    /// <summary>
    /// The balancer's cost of sending one more call here: the calls in flight, plus this one, times the average call
    /// time. An address that answers 20 times slower costs 20 times more at equal load (Finagle's and Linkerd's
    /// load-by-latency), so power of two choices leaves it nearly idle rather than giving it one call in two picks.
    /// </summary>
    public long Cost => (InFlight + 1) * Math.Max(1, AverageTicks);

    /// <summary>Starts the average afresh at <paramref name="ticks"/>: for an address that joins or comes back, the others' median.</summary>
    public void ResetAverage(long ticks) => Volatile.Write(ref _averageTicks, ticks);

    public void Leased() => Interlocked.Increment(ref _inFlight);

    public void Released(bool failed, TimeSpan held)
    {
        Interlocked.Decrement(ref _inFlight);
        Interlocked.Increment(ref _calls);
        Interlocked.Increment(ref _intervalCalls);
        Interlocked.Add(ref _intervalTicks, held.Ticks);
        var average = Volatile.Read(ref _averageTicks);
        Volatile.Write(ref _averageTicks, average == 0 ? Math.Max(1, held.Ticks) : average + ((held.Ticks - average) / 5));
        if (failed)
        {
            Failed();
        }
        else if (Volatile.Read(ref _consecutiveFailures) != 0)
        {
            Volatile.Write(ref _consecutiveFailures, 0);
        }
    }

    // An open that succeeds does not end a run of failures: a replacement for a channel a call broke opens fine, and
    // only a call that then succeeds shows the address serving again.
    public void Opened()
    {
        if (State == EndpointState.Probing)
        {
            _owner.Readmit(this);
        }
    }

    public void OpenFailed(Exception error) => Failed();

    public void BreakerOpened()
    {
        if (State == EndpointState.Active)
        {
            _owner.Eject(this, "its opens tripped the circuit breaker");
        }
    }

    /// <summary>Takes the interval's calls, mean lease time and failures, and starts the next interval.</summary>
    public (long Calls, TimeSpan Mean, long Failures) TakeInterval()
    {
        var calls = Interlocked.Exchange(ref _intervalCalls, 0);
        var ticks = Interlocked.Exchange(ref _intervalTicks, 0);
        var failures = Interlocked.Exchange(ref _intervalFailures, 0);
        return (calls, calls == 0 ? TimeSpan.Zero : TimeSpan.FromTicks(ticks / calls), failures);
    }

    public void ResetFailures() => Volatile.Write(ref _consecutiveFailures, 0);

    public BalancedEndpointSnapshot Snapshot(long now, TimeProvider time, ChannelPoolSnapshot pool) => new(
        Address,
        Pool.Name,
        State,
        InFlight,
        Volatile.Read(ref _calls),
        Volatile.Read(ref _failures),
        Ejections,
        State == EndpointState.Ejected ? time.GetElapsedTime(now, Math.Max(now, EjectedUntil)) : null,
        pool);

    private void Failed()
    {
        Interlocked.Increment(ref _failures);
        Interlocked.Increment(ref _intervalFailures);
        if (Interlocked.Increment(ref _consecutiveFailures) >= _owner.ConsecutiveFailuresToEject && State == EndpointState.Active)
        {
            _owner.Eject(this, $"{Volatile.Read(ref _consecutiveFailures)} failures in a row");
        }
    }
}
