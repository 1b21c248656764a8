namespace ChannelPool;

/// <summary>
/// Adaptive sharing (<see cref="LeaseSharing.Adaptive"/>): whether a lease may join a channel other leases hold, decided
/// from how fast leases end and how long they last. <see cref="PoolState{TChannel}"/> owns one and feeds it under its gate.
/// </summary>
/// <remarks>
/// <para>
/// The rule. Leases are watched in windows of at least <see cref="MinSamples"/> leases and <see cref="MinWindow"/>: how
/// many end each second, and the median duration of the last <see cref="MedianSamples"/>. A window of leases that began
/// while each lease had a channel of its own (exclusive) makes the baseline; then leases share, and each window of
/// leases that began while they shared is judged against it. Sharing stops when those leases end at less than
/// 1 / <see cref="SlowerFactor"/> of the baseline's rate (a service that serves one session's calls one at a time serves
/// the callers of a shared channel one after another), or last more than <see cref="StallFactor"/> times as long (a
/// binding that stalls under concurrent calls on one session, or a queue that the rate of a light load hides). Time in
/// which no lease is held does not count toward a window or its rate: the rate is of leases per second of leasing.
/// After a stop, sharing is tried again after <see cref="FirstProbeDelay"/>, twice as long after each failed try, at
/// most <see cref="MaxProbeDelay"/>; a try that passes its first window resets the delay. A try that goes on takes a
/// fresh baseline every <see cref="RefreshWindows"/> windows.
/// </para>
/// <para>
/// Why the rate first: duration misjudges a fast service. On a shared WCF channel one receive loop completes every
/// caller's call, and each caller's next steps run on it before the next reply is read, so a shared lease lasts longer
/// while more of them end each second (net.tcp with TLS, 8 callers, an instant service: twice the median duration, a
/// fifth more calls). Windows last at least <see cref="MinWindow"/> because over a millisecond a rate is noise. Medians,
/// not means: a lease's duration has a long tail (a collection, a thread-pool stall). A baseline left stale by a change
/// of load reads as a stop and a try a tenth of a second later, or is refreshed.
/// </para>
/// <para>Nothing here allocates after construction, and the lease path reads only <see cref="Allowed"/>.</para>
/// </remarks>
internal sealed class SharingController
{
    /// <summary>Sharing stops when leases end at less than 1 / this of the exclusive rate.</summary>
    public const double SlowerFactor = 1.5;

    /// <summary>Sharing stops when leases' median duration is more than this many times the exclusive one.</summary>
    public const double StallFactor = 8;

    /// <summary>The fewest leases a window holds.</summary>
    public const int MinSamples = 16;

    /// <summary>How many recent durations a window's median is taken over.</summary>
    public const int MedianSamples = 32;

    /// <summary>Windows of sharing after which a fresh baseline is taken.</summary>
    public const int RefreshWindows = 32;

    /// <summary>The shortest window, in time with a lease held.</summary>
    public static readonly TimeSpan MinWindow = TimeSpan.FromMilliseconds(50);

    /// <summary>The delay before sharing is tried again after it stopped for the first time since a try last passed.</summary>
    public static readonly TimeSpan FirstProbeDelay = TimeSpan.FromMilliseconds(100);

    /// <summary>The longest delay before sharing is tried again, after failed tries doubled it.</summary>
    public static readonly TimeSpan MaxProbeDelay = TimeSpan.FromMinutes(5);

    private const long NotQuiet = long.MinValue;

    private readonly long _frequency;
    private readonly long _minWindow;
    private readonly long[] _durations = new long[MedianSamples];
    private readonly long[] _sorted = new long[MedianSamples];
    private int _samples;
    private long _windowStart;
    private long _windowQuiet;
    private long _quietSince = NotQuiet;
    private int _windows;
    private bool _refreshing;
    private long _probeAt;
    private TimeSpan _probeDelay = FirstProbeDelay;

    /// <summary>Starts with sharing off, to try once a baseline is in.</summary>
    public SharingController(long timestampFrequency, long now)
    {
        _frequency = timestampFrequency;
        _minWindow = (long)(MinWindow.TotalSeconds * timestampFrequency);
        _probeAt = now;
    }

    /// <summary>Gets whether a lease may join a channel others hold.</summary>
    public bool Allowed { get; private set; }

    /// <summary>Gets how many times sharing stopped because leases were slower with it.</summary>
    public long Stops { get; private set; }

    /// <summary>Gets how long after the last stop sharing is tried again.</summary>
    public TimeSpan RetryIn { get; private set; }

    /// <summary>Gets the baseline's median lease duration, in timestamp units.</summary>
    public long Baseline { get; private set; }

    /// <summary>Gets the baseline's leases per second.</summary>
    public double BaselineRate { get; private set; }

    /// <summary>Gets the last window of sharing's median lease duration, in timestamp units.</summary>
    public long SharingMedian { get; private set; }

    /// <summary>Gets the last window of sharing's leases per second.</summary>
    public double SharingRate { get; private set; }

    /// <summary>Takes one lease's duration. Returns whether, and why, this starts or stops sharing.</summary>
    /// <param name="duration">How long the lease lasted, in timestamp units.</param>
    /// <param name="sharing">Whether it began while leases shared channels.</param>
    /// <param name="now">The timestamp of its release.</param>
    /// <param name="quiet">Whether no lease is left after this one: the pool is quiet until the next lease begins.</param>
    public SharingSwitch Record(long duration, bool sharing, long now, bool quiet)
    {
        // Time with no lease held is not the pool's to judge (callers that stopped, or went elsewhere a while), so it is
        // left out of the window's rate: it counts leases per second of leasing.
        var quietFor = _quietSince == NotQuiet ? 0 : Math.Max(0, now - duration - _quietSince);
        _quietSince = quiet ? now : NotQuiet;
        if (sharing != Allowed || now < _probeAt)
        {
            // A lease that began before a switch measures neither regime; the baseline is of leases after the delay.
            _samples = 0;
            return SharingSwitch.None;
        }

        if (_samples == 0)
        {
            // A window runs from its first lease's end, so time before it (a warm-up, an idle spell) is not in its rate.
            _windowStart = now;
            _windowQuiet = 0;
        }
        else
        {
            _windowQuiet += quietFor;
        }

        _durations[_samples++ % MedianSamples] = duration;
        var busy = now - _windowStart - _windowQuiet;
        if (_samples < MinSamples || busy < _minWindow)
        {
            return SharingSwitch.None;
        }

        var rate = (_samples - 1) * (double)_frequency / busy;
        var median = Median();
        _samples = 0;
        return sharing ? Judge(rate, median, now) : StartSharing(rate, median);
    }

    private SharingSwitch StartSharing(double rate, long median)
    {
        (BaselineRate, Baseline) = (rate, median);
        _windows = 0;
        Allowed = true;
        var resumed = _refreshing;
        _refreshing = false;
        return resumed ? SharingSwitch.Resumed : SharingSwitch.Started;
    }

    private SharingSwitch Judge(double rate, long median, long now)
    {
        (SharingRate, SharingMedian) = (rate, median);
        if (rate * SlowerFactor < BaselineRate || median > StallFactor * Baseline)
        {
            Allowed = false;
            Stops++;
            RetryIn = _probeDelay;
            _probeAt = now + (long)(_probeDelay.TotalSeconds * _frequency);
            _probeDelay = _probeDelay * 2 < MaxProbeDelay ? _probeDelay * 2 : MaxProbeDelay;
            return SharingSwitch.Stopped;
        }

        if (++_windows == 1)
        {
            _probeDelay = FirstProbeDelay;
        }
        else if (_windows == RefreshWindows)
        {
            // Not a stop: sharing resumes as soon as the fresh baseline is in.
            Allowed = false;
            _refreshing = true;
            return SharingSwitch.Paused;
        }

        return SharingSwitch.None;
    }

    /// <summary>The upper median of the window's last durations.</summary>
    private long Median()
    {
        var count = Math.Min(_samples, MedianSamples);
        Array.Copy(_durations, _sorted, count);
        Array.Sort(_sorted, 0, count);
        return _sorted[count / 2];
    }
}

/// <summary>What a lease's duration did to sharing.</summary>
internal enum SharingSwitch
{
    /// <summary>Nothing.</summary>
    None,

    /// <summary>A baseline is in, and leases share.</summary>
    Started,

    /// <summary>Leases that shared were slower: each has a channel of its own until the next try.</summary>
    Stopped,

    /// <summary>Sharing pauses for a fresh baseline.</summary>
    Paused,

    /// <summary>The fresh baseline is in, and sharing resumes.</summary>
    Resumed,
}
