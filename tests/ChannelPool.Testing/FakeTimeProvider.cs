namespace ChannelPool.Testing;

/// <summary>
/// A <see cref="TimeProvider"/> whose clock moves only when a test calls <see cref="Advance"/>. Timers fire, in due
/// order, on the thread that advances the clock. It stands in for Microsoft.Extensions.TimeProvider.Testing, which the
/// package source does not hold (docs/dependencies.md), and keeps that package's surface so the swap is one line.
/// </summary>
public sealed class FakeTimeProvider : TimeProvider
{
    private readonly Lock _lock = new();
    private readonly Lock _advanceLock = new();
    private readonly List<FakeTimer> _timers = [];
    private DateTimeOffset _utcNow;
    private long _timestamp;
    private long _timerSequence;

    /// <summary>Starts the clock at 2000-01-01T00:00:00Z.</summary>
    public FakeTimeProvider()
        : this(new DateTimeOffset(2000, 1, 1, 0, 0, 0, TimeSpan.Zero))
    {
    }

    /// <summary>Starts the clock at <paramref name="startDateTime"/>.</summary>
    /// <param name="startDateTime">The initial wall-clock time.</param>
    public FakeTimeProvider(DateTimeOffset startDateTime) => _utcNow = startDateTime;

    /// <inheritdoc />
    public override long TimestampFrequency => TimeSpan.TicksPerSecond;

    /// <inheritdoc />
    public override TimeZoneInfo LocalTimeZone => TimeZoneInfo.Utc;

    /// <summary>Gets how many timers are armed; useful to see that a component stopped its timers.</summary>
    public int ActiveTimerCount
    {
        get
        {
            lock (_lock)
            {
                return _timers.Count(t => t.DueAt != long.MaxValue);
            }
        }
    }

    /// <inheritdoc />
    public override DateTimeOffset GetUtcNow()
    {
        lock (_lock)
        {
            return _utcNow;
        }
    }

    /// <inheritdoc />
    public override long GetTimestamp()
    {
        lock (_lock)
        {
            return _timestamp;
        }
    }

    /// <inheritdoc />
    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        ArgumentNullException.ThrowIfNull(callback);
        var timer = new FakeTimer(this, callback, state);
        lock (_lock)
        {
            timer.Sequence = _timerSequence++;
            _timers.Add(timer);
            Schedule(timer, dueTime, period);
        }

        return timer;
    }

    /// <summary>Moves the clock forward by <paramref name="delta"/>, firing every timer that falls due on the way.</summary>
    /// <param name="delta">How far to move; must not be negative.</param>
    public void Advance(TimeSpan delta)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(delta, TimeSpan.Zero);
        lock (_advanceLock)
        {
            long target;
            lock (_lock)
            {
                target = _timestamp + delta.Ticks;
            }

            while (true)
            {
                FakeTimer? due = null;
                lock (_lock)
                {
                    foreach (var timer in _timers)
                    {
                        if (timer.DueAt <= target && (due is null || timer.DueAt < due.DueAt || (timer.DueAt == due.DueAt && timer.Sequence < due.Sequence)))
                        {
                            due = timer;
                        }
                    }

                    if (due is null)
                    {
                        MoveTo(target);
                        return;
                    }

                    MoveTo(Math.Max(_timestamp, due.DueAt));
                    due.DueAt = due.Period > 0 ? due.DueAt + due.Period : long.MaxValue;
                }

                due.Fire();
            }
        }
    }

    /// <summary>Moves the wall clock to <paramref name="value"/>, firing timers due on the way; it cannot go back.</summary>
    /// <param name="value">The new wall-clock time.</param>
    public void SetUtcNow(DateTimeOffset value) => Advance(value - GetUtcNow());

    private void MoveTo(long timestamp)
    {
        _utcNow += TimeSpan.FromTicks(timestamp - _timestamp);
        _timestamp = timestamp;
    }

    private void Schedule(FakeTimer timer, TimeSpan dueTime, TimeSpan period)
    {
        timer.DueAt = dueTime == Timeout.InfiniteTimeSpan ? long.MaxValue : _timestamp + Math.Max(0, dueTime.Ticks);
        timer.Period = period == Timeout.InfiniteTimeSpan || period <= TimeSpan.Zero ? 0 : period.Ticks;
    }

    private sealed class FakeTimer(FakeTimeProvider owner, TimerCallback callback, object? state) : ITimer
    {
        public long DueAt { get; set; } = long.MaxValue;

        public long Period { get; set; }

        public long Sequence { get; set; }

        public bool Change(TimeSpan dueTime, TimeSpan period)
        {
            lock (owner._lock)
            {
                if (!owner._timers.Contains(this))
                {
                    return false;
                }

                owner.Schedule(this, dueTime, period);
                return true;
            }
        }

        public void Fire() => callback(state);

        public void Dispose()
        {
            lock (owner._lock)
            {
                owner._timers.Remove(this);
            }
        }

        public ValueTask DisposeAsync()
        {
            Dispose();
            return ValueTask.CompletedTask;
        }
    }
}
