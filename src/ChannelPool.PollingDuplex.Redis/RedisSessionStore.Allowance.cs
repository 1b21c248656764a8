using System.Globalization;
using ChannelPool.PollingDuplex.Stores;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// A session's allowance across its topics: what its sources' logs hold beyond its cursors, summed over all of them,
/// is held to <see cref="PollingDuplexOptions.MaxPendingMessagesPerSession"/> and
/// <see cref="PollingDuplexOptions.MaxPendingBytesPerSession"/>, as its one buffer is in memory. A publish cannot look
/// at its subscribers (it costs the same at every subscriber count, and a topic's script cannot touch a session's
/// keys), so the session is counted from its side: at each renewal, whose joins report what each log holds beyond the
/// cursor, and by the sweep for a session that makes no request, without renewing it.
/// </summary>
internal sealed partial class RedisSessionStore
{
    /// <summary>How many sessions that make no request one node's sweep checks at most, each sweep.</summary>
    internal const int QuietChecksPerSweep = 100;

    private int _checkingQuiet;

    // The sweep's round through the quiet sessions: the live-set score after which its next page starts (0: a new
    // round), and when a new round may start (a round that checked some waits a renewal interval).
    private double _quietFrom;
    private long _quietRestUntil;

    /// <summary>Renews a session's membership of a source, reporting its cursor there; returns what the log holds beyond it.</summary>
    private async Task<LogBehind> RenewMembershipAsync(string source, string id, long until, string cursor, long? since, bool text)
    {
        var r = await EvalAsync(
            RedisSourceScripts.Join,
            Keys.Source(source).All,
            [Now(), SourceTtlMs, id, until, cursor, Since(since), text ? "1" : "0", Options.MaxPendingMessagesPerSession, Options.MaxPendingBytesPerSession]);
        return LogBehind.Read(source, r);
    }

    /// <summary>Counts what a source's log holds beyond a session's cursor, renewing nothing.</summary>
    private async Task<LogBehind> CountBehindAsync(string source, string id, string cursor, long? since, bool text)
    {
        var r = await EvalAsync(
            RedisSourceScripts.Behind,
            Keys.Source(source).All,
            [Now(), SourceTtlMs, id, cursor, Since(since), text ? "1" : "0", Options.MaxPendingMessagesPerSession, Options.MaxPendingBytesPerSession]);
        return LogBehind.Read(source, r);
    }

    /// <summary>
    /// Applies the overflow policy when the session's sources hold more beyond its cursors than its allowance, or one
    /// no longer holds what it missed: <see cref="DuplexOverflowPolicy.FaultSession"/> ends it (its memberships go, so
    /// the logs free what it held back); the gap policy reports it as having taken through each log's end, so the logs
    /// free that while its cursors stay, and its next take reports the exact gap. Returns whether the session ended.
    /// </summary>
    private async Task<bool> EnforceAllowanceAsync(string id, IReadOnlyCollection<LogBehind> behind)
    {
        long messages = 0, bytes = 0;
        var overflowed = false;
        foreach (var log in behind)
        {
            messages += log.Messages;
            bytes += log.Bytes;
            overflowed |= log.Overflowed;
        }

        if (!overflowed && messages <= Options.MaxPendingMessagesPerSession && bytes <= Options.MaxPendingBytesPerSession)
        {
            return false;
        }

        if (Options.OverflowPolicy == DuplexOverflowPolicy.FaultSession)
        {
            if (await EndByServerAsync(id, DuplexSessionEndReason.Overflow, onlyIfPending: false))
            {
                RecordMessagesDropped(1);
                return true;
            }

            return false;
        }

        var skipping = new List<Task>(behind.Count);
        foreach (var log in behind)
        {
            if (log.Last > 0)
            {
                skipping.Add(EvalAsync(RedisSourceScripts.Skip, Keys.Source(log.Source).All, [Now(), SourceTtlMs, id, log.Epoch + ":" + log.Last.ToString(CultureInfo.InvariantCulture)]));
            }
        }

        await Task.WhenAll(skipping).ConfigureAwait(false);
        return false;
    }

    /// <summary>
    /// The sweep's part for sessions that make no request, so have no renewal to count them: each whose last renewal
    /// is two renewal intervals old is checked, without renewing it, by the node whose session <c>Check</c> script
    /// claims it (no other within half a renewal interval: a node's rounds are a renewal interval apart, so jitter
    /// never makes one skip it), and at most <see cref="QuietChecksPerSweep"/> a sweep.
    /// </summary>
    private async Task CheckQuietSessionsAsync()
    {
        if (Interlocked.Exchange(ref _checkingQuiet, 1) == 1)
        {
            return;
        }

        try
        {
            var now = Now();
            if (now < _quietRestUntil)
            {
                return;
            }

            // The live set's score is LiveUntil of the last renewal (or of the first poll, or the first-poll deadline).
            var quietUntil = LiveUntil(now - (2 * RenewEveryMs));
            var page = await _db.SortedSetRangeByScoreWithScoresAsync(Keys.Live, Math.Max(_quietFrom, now), quietUntil, Exclude.Start, Order.Ascending, 0, QuietChecksPerSweep).ConfigureAwait(false);
            if (page.Length < QuietChecksPerSweep)
            {
                // The round is over. A session it checked is not due again for a renewal interval; with none, the next
                // sweep looks again (one range read).
                _quietFrom = 0;
                _quietRestUntil = page.Length > 0 ? now + RenewEveryMs : 0;
            }
            else
            {
                _quietFrom = page[^1].Score;
            }

            foreach (var entry in page)
            {
                await CheckQuietSessionAsync((string)entry.Element!, now);
            }
        }
        catch (Exception ex) when (ex is DuplexStoreUnavailableException or RedisException or RedisTimeoutException)
        {
            // The next sweep looks again.
        }
        finally
        {
            Volatile.Write(ref _checkingQuiet, 0);
        }
    }

    private async Task CheckQuietSessionAsync(string id, long now)
    {
        var r = await EvalSessionAsync(RedisSessionScripts.Check, id, string.Empty, null, now - (2 * RenewEveryMs), now - (RenewEveryMs / 2));
        if ((long)r[0] != 0)
        {
            return;
        }

        var pollEnds = (long)r[1];
        var text = (DuplexEncoding)(int)r[2] == DuplexEncoding.Text;
        var at = 3;
        var cursors = ReadCursors(r, ref at);
        var counting = new List<Task<LogBehind>>(cursors.Count);
        foreach (var (source, cursor) in cursors)
        {
            counting.Add(CountBehindAsync(source, id, cursor, pollEnds > now ? null : pollEnds, text));
        }

        await EnforceAllowanceAsync(id, await Task.WhenAll(counting).ConfigureAwait(false));
    }

    /// <summary>The messages after this time count against MaxPendingMessagesPerSession; none while a poll is outstanding.</summary>
    private static RedisValue Since(long? since) => since is { } s ? s : RedisValue.EmptyString;

    /// <summary>What a source's log holds beyond a session's cursor: messages, bytes, and whether it no longer holds what the session missed.</summary>
    private readonly record struct LogBehind(string Source, string Epoch, long Last, long Messages, long Bytes, bool Overflowed)
    {
        /// <summary>Reads {epoch, last id, messages, bytes, overflowed}; a log with nothing to count answers {epoch, last id}.</summary>
        public static LogBehind Read(string source, RedisResult[] r) => r.Length < 5
            ? new LogBehind(source, (string)r[0]!, (long)r[1], 0, 0, false)
            : new LogBehind(source, (string)r[0]!, (long)r[1], (long)r[2], (long)r[3], (long)r[4] == 1);
    }
}
