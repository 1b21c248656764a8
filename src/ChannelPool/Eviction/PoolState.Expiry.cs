namespace ChannelPool;

// Expiry without synchronized bursts: where a new channel's deadline goes, the replacement opened before a deadline, and
// idle channels evicted at theirs.
//
// Deadlines are phases on a circle of period P = lifetime − lead. A cursor remembers the last deadline placed; each open
// places its channel one spacing s = P / n after it, n being the channels the circle holds (the idle target, or the
// channels open and opening when there are more), wrapped into the window a channel opened now may have. So a
// warm-up of N channels spreads them over a whole lifetime, a replacement opened just before its predecessor's deadline
// lands one period after it, and a refill after a mass eviction spreads again. The period is the lifetime less the lead,
// not the lifetime, because a replacement opens one lead early and must still end within one lifetime of its open; with
// the lifetime as the period, replacements would fall behind their slots and bunch. The random jitter then brings each
// deadline forward by at most one spacing, so every deadline stays within its own slot: two channels never expire
// closer together than the lattice allows, whatever the draws.
internal sealed partial class PoolState<TChannel>
{
    /// <summary>The longest lead a replacement gets: enough for a slow secure open, short enough to cost little.</summary>
    internal static readonly TimeSpan MaxReplacementLead = TimeSpan.FromSeconds(2);

    /// <summary>Gets the timestamp before which the expiry timer has nothing to do; read without the gate.</summary>
    public long NextExpiryCheck => Volatile.Read(ref _nextExpiryCheck);

    /// <summary>
    /// How long before its deadline a channel is replaced: 5% of the lifetime, at most <see cref="MaxReplacementLead"/>
    /// (4.5 s would be 5% of 90 s; 2 s covers a secure open several times over).
    /// </summary>
    internal static TimeSpan ReplacementLeadFor(TimeSpan lifetime)
    {
        var lead = lifetime / 20;
        return lead < MaxReplacementLead ? lead : MaxReplacementLead;
    }

    /// <summary>
    /// The expiry timer's step, cheap and without the factory's usability probe: idle channels past their deadline are
    /// evicted; channels within the lead of theirs get a replacement each, one for one, while the fresh idle channels and
    /// the opens in flight fall short of the idle target. Returns the evicted channels to close and opens to start.
    /// </summary>
    public (List<PooledChannel<TChannel>>? Expired, int Opens) Expire()
    {
        _gate.Enter();
        if (_disposed)
        {
            _gate.Exit();
            return (null, 0);
        }

        var now = _timeProvider.GetTimestamp();
        List<PooledChannel<TChannel>>? expired = null;
        var needing = 0;
        if (Resting.Any(static (entry, now) => entry.EvictAfter <= now, now))
        {
            expired = Resting.RemoveAll(entry => entry.EvictAfter <= now);
            foreach (var entry in expired)
            {
                MarkEvicted_NoLock(entry);
                needing += entry.ReplacementStarted ? 0 : 1;
            }
        }

        foreach (var entry in _open)
        {
            needing += IsDueForReplacement(entry, now) ? 1 : 0;
        }

        // Only a departure refills here: a pool nobody has used (or one paused between ticks) opens nothing on a tick.
        var opens = expired is { Count: > 0 } ? Refill_NoLock() : 0;
        var replacements = ReserveOpens_NoLock(Math.Min(needing, IdleTarget_NoLock() - FreshIdle_NoLock(now) - _openingCount));
        opens += replacements;

        // The channels already evicted took their share first; the rest are marked, so each gets one replacement at most.
        replacements -= expired?.Count(static entry => !entry.ReplacementStarted) ?? 0;
        var next = long.MaxValue;
        foreach (var entry in _open)
        {
            if (IsDueForReplacement(entry, now) && replacements-- > 0)
            {
                entry.ReplacementStarted = true;
            }

            if (!entry.IsEvicted && !entry.IsRetired)
            {
                next = Math.Min(next, entry.ReplacementStarted ? entry.EvictAfter : Math.Min(entry.ReplaceAt, entry.EvictAfter));
            }
        }

        _nextExpiryCheck = next;
        Exit(nameof(Expire));
        return (expired, opens);

        static bool IsDueForReplacement(PooledChannel<TChannel> entry, long now) =>
            !entry.IsEvicted && !entry.IsRetired && !entry.ReplacementStarted && entry.ReplaceAt <= now;
    }

    /// <summary>
    /// A channel leaves for its lifetime (leased past its deadline, or met expired at lease): it gets a replacement, one
    /// for one, when the fresh idle channels and the opens in flight fall short of the idle target without it.
    /// </summary>
    private int ReplaceExpired_NoLock(PooledChannel<TChannel> entry)
    {
        if (entry.ReplacementStarted || entry.IsRetired)
        {
            return 0;
        }

        entry.ReplacementStarted = true;
        return ReserveOpens_NoLock(Math.Min(1, IdleTarget_NoLock() - FreshIdle_NoLock(_clock.Now) - _openingCount));
    }

    /// <summary>The idle channels not yet within the lead of their deadline.</summary>
    private int FreshIdle_NoLock(long now) => _idle.CountWhere(static (entry, now) => entry.ReplaceAt > now, now);

    /// <summary>
    /// Places a channel that just opened on the circle of deadlines (see the top of this file) and sets its deadline. The
    /// expiry timer looks again no later than its replacement time.
    /// </summary>
    private void PlaceDeadline_NoLock(PooledChannel<TChannel> entry)
    {
        var (lifetime, period, spacing, jitterSpan, lead) = ExpiryScale_NoLock();

        // The window a deadline placed now may fall in: late enough that jitter cannot pull it into the lead, and one
        // period long, so wrapping keeps its phase on the circle.
        var earliest = entry.OpenedAt + lead + jitterSpan;
        var deadline = _deadlineCursor == 0 ? earliest + spacing : _deadlineCursor + spacing;
        if (deadline <= earliest)
        {
            deadline += (((earliest - deadline) / period) + 1) * period;
        }
        else if (deadline > earliest + period)
        {
            deadline -= ((deadline - earliest - 1) / period) * period;
        }

        _deadlineCursor = deadline;
        entry.LifeShare = (double)(deadline - entry.OpenedAt) / lifetime;
        entry.ScheduleExpiry(lifetime, jitterSpan, _clock.EvictionMargin(_settings.ChannelLifetime), lead);
        _nextExpiryCheck = Math.Min(_nextExpiryCheck, entry.ReplaceAt);
    }

    /// <summary>Sets a channel's deadline again from the settings in force, keeping its place on the circle (a reload).</summary>
    private void RescheduleExpiry_NoLock(PooledChannel<TChannel> entry)
    {
        var (lifetime, _, _, jitterSpan, lead) = ExpiryScale_NoLock();
        entry.ScheduleExpiry(lifetime, jitterSpan, _clock.EvictionMargin(_settings.ChannelLifetime), lead);
        _nextExpiryCheck = long.MinValue;
    }

    /// <summary>The lifetime, the circle's period, the spacing, the jitter's span and the lead, in timestamp units.</summary>
    private (long Lifetime, long Period, long Spacing, long JitterSpan, long Lead) ExpiryScale_NoLock()
    {
        var settings = _settings;
        var lifetime = _clock.ToTimestampDelta(settings.ChannelLifetime);
        var lead = _clock.ToTimestampDelta(ReplacementLeadFor(settings.ChannelLifetime));
        var period = Math.Max(lifetime - lead, 1);

        // One slot per channel the circle holds: the idle target's (PoolSize when fixed) while the pool fills, or the
        // channels open and opening when there are more. Never PoolSize alone: an adaptive pool that keeps 4 channels of
        // a PoolSize of 50 would space them for 50, and each would circle the lattice in 4/50 of a lifetime.
        var spacing = Math.Max(period / Math.Max(Math.Max(_idleTarget, _open.Count + _openingCount), 1), 1);

        // Jitter within one spacing keeps each deadline in its slot; more would only let neighbours bunch again.
        var jitterSpan = Math.Min((long)(lifetime * settings.LifetimeJitter), spacing);
        return (lifetime, period, spacing, jitterSpan, lead);
    }
}
