namespace ChannelPool;

/// <summary>
/// The adaptive idle target: how many idle channels the pool keeps open, worked out from what the pool already sees.
/// <see cref="PoolState{TChannel}"/> owns one and consults it under its gate.
/// </summary>
/// <remarks>
/// <para>
/// The rule. Demand is the channels in use: leased, plus one per <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/>
/// waiting callers. The idle target is headroom for the callers who may arrive, counting the channels already in use:
/// <c>(peak − now) + arrivals + flow</c>. <em>Peak − now</em> is the callers recently here and gone: peak is the
/// highest demand over the last window, held through it and then decaying by the half-life. <em>Arrivals</em> is as
/// many again as are in use now (demand may double), but at most half the room <see cref="ChannelPoolOptions.MaxChannels"/>
/// leaves above them: a doubling past <c>MaxChannels</c> cannot be served anyway, and a pool at its peak should not
/// hold open every channel it may ever open. <em>Flow</em> is the highest rate, over the window, at which leases used
/// channels up (single-use releases; broken, unusable and expired channels) times the 90th percentile of recent open
/// times: the channels that go while a replacement opens (Little's law). The target stays between the minimum and
/// <c>MaxChannels</c>.
/// </para>
/// <para>
/// "Now" is the higher of the demand since the last tick and in the bucket before it, so a lease count that dips
/// between two calls does not read as callers gone. Peak rises at once and decays slowly; the arrivals follow demand
/// as it is, so at a plateau the target is the arrivals' share alone, not a second peak stacked on the leased one.
/// </para>
/// <para>
/// Cheap by design: the lease path only keeps the peak of one count (in <see cref="PoolState{TChannel}"/>); the window,
/// the rates and the decay move on <see cref="Tick"/>, an eighth of the window apart. Nothing here allocates after
/// construction.
/// </para>
/// </remarks>
internal sealed class IdleTargetController
{
    /// <summary>The window is kept as this many buckets, each holding its peak demand and its used-up rate.</summary>
    public const int Buckets = 8;

    private const int OpenTimeSamples = 32;

    private readonly TimeProvider _timeProvider;
    private readonly int[] _peaks = new int[Buckets];
    private readonly double[] _usedUpPerSecond = new double[Buckets];
    private readonly double[] _openSeconds = new double[OpenTimeSamples];
    private readonly double[] _sorted = new double[OpenTimeSamples];
    private IdleTargetSettings _settings;
    private int _maxChannels;
    private int _bucket;
    private int _openSamples;
    private long _lastTick;

    // The peak of demand as the target holds it: up at once, down by the half-life once the window forgets it.
    private double _peak;

    // Demand in the last closed bucket; "now" is the higher of it and the demand since.
    private int _lastDemand;
    private double _target;

    /// <summary>Starts the target at <paramref name="start"/>, held as if it were the demand of the last window.</summary>
    public IdleTargetController(IdleTargetSettings settings, int maxChannels, int start, TimeProvider timeProvider)
    {
        _settings = settings;
        _maxChannels = maxChannels;
        _timeProvider = timeProvider;
        _lastTick = timeProvider.GetTimestamp();
        HoldForWindow(start);
        _peak = Math.Min(start, maxChannels);
        _target = Wanted(0);
    }

    /// <summary>Gets the target in force: the fractional target rounded up, less rounding noise, so 20.000000000000004 is 20.</summary>
    public int Target => (int)Math.Ceiling(_target - 1e-6);

    /// <summary>Gets the peak demand over the window, as of the last tick.</summary>
    public int WindowPeak { get; private set; }

    /// <summary>Gets the channels used up while one opens (used-up rate × open time p90), as of the last tick.</summary>
    public double Flow { get; private set; }

    /// <summary>Keeps an open's duration, across its attempts, for the open time's percentile.</summary>
    public void RecordOpenTime(TimeSpan elapsed) => _openSeconds[_openSamples++ % OpenTimeSamples] = elapsed.TotalSeconds;

    /// <summary>
    /// Follows <paramref name="peakDemand"/> at once: a higher peak raises the peak held, and the target becomes the
    /// headroom for arrivals at that demand. Returns the target, lower than before when demand grew into it.
    /// </summary>
    /// <param name="peakDemand">The peak demand since the last tick.</param>
    public int Raise(int peakDemand)
    {
        _peak = Math.Max(_peak, Math.Min(peakDemand, _maxChannels));
        _target = Wanted(Math.Max(peakDemand, _lastDemand));
        return Target;
    }

    /// <summary>
    /// Rises to at least <paramref name="idle"/> and holds it for a window, as if that much demand had just been seen
    /// and left (a warm-up asks for <see cref="ChannelPoolOptions.PoolSize"/>).
    /// </summary>
    public int RaiseTo(int idle)
    {
        HoldForWindow(idle);
        _peak = Math.Max(_peak, Math.Min(idle, _maxChannels));
        _target = Math.Max(_target, Clamp(idle));
        return Target;
    }

    /// <summary>
    /// Closes the current bucket with its demand and moves the target: the peak held rises at once to the window's, or
    /// comes down by the half-life, and the target follows it and the demand now. While <paramref name="hold"/> (the
    /// breaker stops opens, or opens back off), time stands still for the target: the demand it would see is callers
    /// turned away, not what they need.
    /// </summary>
    /// <param name="peakDemand">The peak demand since the last tick.</param>
    /// <param name="usedUp">Channels leases used up since the last tick.</param>
    /// <param name="hold">Whether to leave the target where it is.</param>
    /// <returns>The target.</returns>
    public int Tick(int peakDemand, int usedUp, bool hold)
    {
        var now = _timeProvider.GetTimestamp();
        var elapsed = _timeProvider.GetElapsedTime(_lastTick, now).TotalSeconds;
        _lastTick = now;
        if (hold || elapsed <= 0)
        {
            return Target;
        }

        _peaks[_bucket] = peakDemand;
        _usedUpPerSecond[_bucket] = usedUp / elapsed;
        _bucket = (_bucket + 1) % Buckets;
        _lastDemand = peakDemand;

        WindowPeak = _peaks.Max();
        Flow = _usedUpPerSecond.Max() * OpenTimeP90();
        var windowPeak = Math.Min(WindowPeak, _maxChannels);
        if (windowPeak >= _peak)
        {
            _peak = windowPeak;
        }
        else
        {
            var excess = (_peak - windowPeak) * Math.Pow(0.5, elapsed / _settings.DecayHalfLife.TotalSeconds);
            _peak = excess < 0.5 ? windowPeak : windowPeak + excess;
        }

        _target = Wanted(peakDemand);
        return Target;
    }

    /// <summary>Follows new settings; the target stays where it is, within the new bounds.</summary>
    public int Reconfigure(IdleTargetSettings settings, int maxChannels)
    {
        _settings = settings;
        _maxChannels = maxChannels;
        _peak = Math.Min(_peak, maxChannels);
        _target = Clamp(_target);
        return Target;
    }

    /// <summary>The headroom at <paramref name="demand"/> channels in use: those recently gone, arrivals and flow.</summary>
    private double Wanted(int demand)
    {
        var now = Math.Min(demand, _maxChannels);
        var arrivals = Math.Min(now, (_maxChannels - now) / 2.0);
        return Clamp(Math.Max(_peak - now, 0) + arrivals + Flow);
    }

    private double Clamp(double target) => Math.Clamp(target, _settings.Minimum, _maxChannels);

    private void HoldForWindow(int demand)
    {
        for (var i = 0; i < Buckets; i++)
        {
            _peaks[i] = Math.Max(_peaks[i], demand);
        }
    }

    private double OpenTimeP90()
    {
        var count = Math.Min(_openSamples, OpenTimeSamples);
        if (count == 0)
        {
            return 0;
        }

        Array.Copy(_openSeconds, _sorted, count);
        Array.Sort(_sorted, 0, count);
        return _sorted[(int)Math.Ceiling(0.9 * count) - 1];
    }
}

/// <summary>The idle target's settings, resolved by <see cref="PoolSettings.From"/>.</summary>
/// <param name="Mode">Fixed at PoolSize, or adaptive.</param>
/// <param name="Minimum">The adaptive target's floor.</param>
/// <param name="Window">How long a peak of demand is remembered.</param>
/// <param name="DecayHalfLife">How fast the target comes down after it.</param>
/// <param name="RefillShare">The set refill threshold's share of the pool size, which the adaptive threshold keeps; null when it is not set.</param>
internal sealed record IdleTargetSettings(IdleTargetMode Mode, int Minimum, TimeSpan Window, TimeSpan DecayHalfLife, double? RefillShare = null)
{
    /// <summary>Gets how often the adaptive target moves its window on: an eighth of it.</summary>
    public TimeSpan TickPeriod => Window / IdleTargetController.Buckets;
}
