namespace ChannelPool;

/// <summary>
/// A coarse "now" for lifetime checks on the lease and release path, refreshed by a <see cref="TimeProvider"/> timer.
/// </summary>
/// <remarks>
/// Reading the precise clock costs about 25 ns on Linux, roughly twice a whole <c>DefaultObjectPool</c> Get+Return,
/// and the hot path would need it twice. Deadlines only need to be right to a fraction of the lifetime, so lease and
/// release read this cached value instead. To stay safe the check is conservative: a channel counts as expired one
/// <see cref="Resolution"/> before its deadline, so it is evicted early by at most that much, never late.
/// </remarks>
internal sealed class PoolClock : IDisposable
{
    private readonly TimeProvider _timeProvider;
    private readonly ITimer _timer;
    private long _now;
    private long _resolution;

    public PoolClock(TimeProvider timeProvider, TimeSpan channelLifetime)
    {
        _timeProvider = timeProvider;
        var resolution = ResolutionFor(channelLifetime);
        _resolution = ToTimestampDelta(resolution);
        _now = timeProvider.GetTimestamp();
        _timer = timeProvider.CreateTimer(static state => ((PoolClock)state!).Tick(), this, resolution, resolution);
    }

    /// <summary>Gets the refresh period in timestamp units.</summary>
    public long Resolution => Volatile.Read(ref _resolution);

    /// <summary>Gets whether <paramref name="deadline"/> has passed, or will within one resolution, by the cached clock.</summary>
    /// <param name="deadline">A timestamp from this clock's <see cref="TimeProvider"/>.</param>
    /// <returns><see langword="true"/> when a channel with that deadline must be evicted.</returns>
    public bool HasPassed(long deadline) => deadline - Resolution <= Volatile.Read(ref _now);

    /// <summary>Gets whether <paramref name="deadline"/> has passed by the precise clock, with the same margin.</summary>
    /// <param name="deadline">A timestamp from this clock's <see cref="TimeProvider"/>.</param>
    /// <returns><see langword="true"/> when a channel with that deadline must be evicted.</returns>
    public bool HasPassedPrecise(long deadline) => deadline - Resolution <= _timeProvider.GetTimestamp();

    /// <summary>Converts a duration to <see cref="TimeProvider.GetTimestamp"/> units.</summary>
    /// <param name="duration">The duration.</param>
    /// <returns>The same duration in timestamp ticks.</returns>
    public long ToTimestampDelta(TimeSpan duration) => (long)(duration.TotalSeconds * _timeProvider.TimestampFrequency);

    /// <summary>Follows a new channel lifetime: the refresh period stays a sixty-fourth of it.</summary>
    /// <param name="channelLifetime">The new lifetime.</param>
    public void Follow(TimeSpan channelLifetime)
    {
        var resolution = ResolutionFor(channelLifetime);
        Tick();
        Volatile.Write(ref _resolution, ToTimestampDelta(resolution));
        _timer.Change(resolution, resolution);
    }

    public void Dispose() => _timer.Dispose();

    /// <summary>A sixty-fourth of the lifetime, between 10 ms and 1 s: under 2% early eviction at any lifetime.</summary>
    internal static TimeSpan ResolutionFor(TimeSpan channelLifetime) =>
        TimeSpan.FromTicks(Math.Clamp(channelLifetime.Ticks / 64, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerSecond));

    private void Tick() => Volatile.Write(ref _now, _timeProvider.GetTimestamp());
}
