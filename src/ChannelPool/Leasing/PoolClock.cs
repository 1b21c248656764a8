namespace ChannelPool;

/// <summary>
/// A coarse "now" for lifetime checks on the lease and release path, refreshed by a <see cref="TimeProvider"/> timer.
/// </summary>
/// <remarks>
/// Reading the precise clock costs about 25 ns on Linux, roughly twice a whole <c>DefaultObjectPool</c> Get+Return,
/// and the hot path would need it twice. Deadlines only need to be right to a fraction of the lifetime, so lease and
/// release read this cached value instead. To stay safe the check is conservative: a channel counts as expired one
/// resolution before its deadline (<see cref="PooledChannel{TChannel}.EvictAfter"/>), so it is evicted early by at most
/// that much, never late.
/// </remarks>
internal sealed class PoolClock : IDisposable
{
    private readonly TimeProvider _timeProvider;
    private readonly ITimer _timer;
    private long _now;

    public PoolClock(TimeProvider timeProvider, TimeSpan channelLifetime)
    {
        _timeProvider = timeProvider;
        var resolution = ResolutionFor(channelLifetime);
        _now = timeProvider.GetTimestamp();
        _timer = timeProvider.CreateTimer(static state => ((PoolClock)state!).Tick(), this, resolution, resolution);
    }

    /// <summary>Gets the cached timestamp: at most one resolution behind the precise clock.</summary>
    public long Now => Volatile.Read(ref _now);

    /// <summary>Converts a duration to <see cref="TimeProvider.GetTimestamp"/> units.</summary>
    /// <param name="duration">The duration.</param>
    /// <returns>The same duration in timestamp ticks.</returns>
    public long ToTimestampDelta(TimeSpan duration) => (long)(duration.TotalSeconds * _timeProvider.TimestampFrequency);

    /// <summary>Gets how much earlier than its deadline a channel counts as expired, in timestamp units.</summary>
    /// <param name="channelLifetime">The lifetime the clock's resolution follows.</param>
    /// <returns>One resolution.</returns>
    public long EvictionMargin(TimeSpan channelLifetime) => ToTimestampDelta(ResolutionFor(channelLifetime));

    /// <summary>Follows a new channel lifetime: the refresh period stays a sixty-fourth of it.</summary>
    /// <param name="channelLifetime">The new lifetime.</param>
    public void Follow(TimeSpan channelLifetime)
    {
        var resolution = ResolutionFor(channelLifetime);
        Tick();
        _timer.Change(resolution, resolution);
    }

    public void Dispose() => _timer.Dispose();

    /// <summary>A sixty-fourth of the lifetime, between 10 ms and 1 s: under 2% early eviction at any lifetime.</summary>
    internal static TimeSpan ResolutionFor(TimeSpan channelLifetime) =>
        TimeSpan.FromTicks(Math.Clamp(channelLifetime.Ticks / 64, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerSecond));

    private void Tick() => Volatile.Write(ref _now, _timeProvider.GetTimestamp());
}
