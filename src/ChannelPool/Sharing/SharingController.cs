namespace ChannelPool;

/// <summary>
/// Adaptive sharing (<see cref="LeaseSharing.Adaptive"/>): whether a lease may join a channel other leases hold, decided
/// from how long leases last. <see cref="PoolState{TChannel}"/> owns one and feeds it under its gate.
/// </summary>
/// <remarks>
/// <para>
/// The rule. Two moving averages of lease duration: leases that had their channel alone, taken while sharing is off,
/// and leases that joined a channel others held, taken while it is on. Sharing starts once <see cref="BaselineSamples"/>
/// fresh alone leases give a baseline, and stops at the shared lease that brings the shared average above
/// <see cref="SlowerFactor"/> times the baseline, once there are <see cref="VerdictSamples"/> of them: a service that
/// serves one session's calls one at a time queues the callers of a shared channel behind each other, and a binding
/// that stalls under concurrent calls on one session shows the same. After a stop, sharing is tried again after
/// <see cref="FirstProbeDelay"/>, twice as long after each failed try, at most <see cref="MaxProbeDelay"/>; a try that
/// lasts <see cref="ProbeSamples"/> shared leases resets the delay.
/// </para>
/// <para>
/// Why durations compare fairly: callers in a loop finish as fast as the pool serves them, so at a given number of
/// callers a lease lasts callers ÷ throughput, and the shorter leases are those of the faster way. Alone leases taken
/// while sharing is on are left out: they start on an idle channel, ahead of any queue, and would flatter the baseline.
/// A baseline left stale by a change of load or service reads as a stop and a fresh try a second later.
/// </para>
/// <para>Nothing here allocates, and the lease path reads only <see cref="Allowed"/>.</para>
/// </remarks>
internal sealed class SharingController
{
    /// <summary>Shared leases lasting more than this many times the alone ones stop sharing.</summary>
    public const double SlowerFactor = 1.5;

    /// <summary>Alone leases, since sharing last stopped, that make a baseline to try sharing against.</summary>
    public const int BaselineSamples = 16;

    /// <summary>Shared leases before their average can stop sharing: enough that one slow call does not.</summary>
    public const int VerdictSamples = 8;

    /// <summary>Shared leases after which a try of sharing counts as passed, and the next delay starts short again.</summary>
    public const int ProbeSamples = 64;

    /// <summary>The delay before sharing is tried again after it stopped for the first time since it last passed.</summary>
    public static readonly TimeSpan FirstProbeDelay = TimeSpan.FromSeconds(1);

    /// <summary>The longest delay before sharing is tried again, after failed tries doubled it.</summary>
    public static readonly TimeSpan MaxProbeDelay = TimeSpan.FromMinutes(5);

    // Each new duration moves an average an eighth of the way: about the last 16 leases count.
    private const double Weight = 1.0 / 8;

    private readonly long _frequency;
    private double _alone;
    private int _aloneSamples;
    private double _shared;
    private int _sharedSamples;
    private long _probeAt;
    private TimeSpan _probeDelay = FirstProbeDelay;

    /// <summary>Starts with sharing off, to try once a baseline is in.</summary>
    public SharingController(long timestampFrequency, long now)
    {
        _frequency = timestampFrequency;
        _probeAt = now;
    }

    /// <summary>Gets whether a lease may join a channel others hold.</summary>
    public bool Allowed { get; private set; }

    /// <summary>Gets how many times sharing stopped because shared leases were slower.</summary>
    public long Stops { get; private set; }

    /// <summary>Gets the average duration of alone leases, in timestamp units.</summary>
    public double AloneAverage => _alone;

    /// <summary>Gets the average duration of shared leases in the current try, in timestamp units.</summary>
    public double SharedAverage => _shared;

    /// <summary>
    /// Takes one lease's duration. Returns <see langword="true"/> when this starts or stops sharing
    /// (<see cref="Allowed"/> tells which).
    /// </summary>
    /// <param name="duration">How long the lease lasted, in timestamp units.</param>
    /// <param name="joined">Whether it joined a channel another lease held.</param>
    /// <param name="now">The timestamp of its release.</param>
    public bool Record(long duration, bool joined, long now)
    {
        if (joined != Allowed)
        {
            // A lease of the other regime, or one that began before a switch: it measures neither.
            return false;
        }

        return joined ? RecordShared(duration, now) : RecordAlone(duration, now);
    }

    private bool RecordAlone(long duration, long now)
    {
        _alone = _aloneSamples++ == 0 && _alone == 0 ? duration : _alone + (Weight * (duration - _alone));
        if (_aloneSamples < BaselineSamples || now < _probeAt)
        {
            return false;
        }

        Allowed = true;
        _sharedSamples = 0;
        return true;
    }

    private bool RecordShared(long duration, long now)
    {
        _shared = _sharedSamples++ == 0 ? duration : _shared + (Weight * (duration - _shared));
        if (_sharedSamples >= VerdictSamples && _shared > SlowerFactor * _alone)
        {
            Allowed = false;
            Stops++;
            _aloneSamples = 0;
            _probeAt = now + (long)(_probeDelay.TotalSeconds * _frequency);
            _probeDelay = _probeDelay * 2 < MaxProbeDelay ? _probeDelay * 2 : MaxProbeDelay;
            return true;
        }

        if (_sharedSamples == ProbeSamples)
        {
            _probeDelay = FirstProbeDelay;
        }

        return false;
    }
}
