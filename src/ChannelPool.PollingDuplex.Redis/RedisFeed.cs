using System.Globalization;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// This node's view of one source's log (a topic, or a user's): its recent entries, read once for every session on the
/// node, and the polls waiting for more. A publish's wake makes the feed read the new entries (one read per node, not
/// per subscriber) and wake its polls, which offer them to their sessions.
/// </summary>
internal sealed class RedisFeed
{
    private readonly RedisSessionStore _store;
    private readonly Lock _lock = new();
    private readonly List<RedisLogEntry> _entries = [];
    private readonly HashSet<RedisPoll> _waiting = [];
    private readonly int _capacity;

    // The log's epoch ("0" when it does not exist), null until the first read.
    private string? _epoch;
    private long _epochNumber;

    // The feed has read the log through _through (the cache ends there); the log holds at least through _last (a wake
    // may announce more than was read); it starts no earlier than _logStart (the last read or wake), and the cache
    // holds nothing before it.
    private long _through;
    private long _last;
    private long _logStart = 1;
    private long _readAt = long.MinValue;
    private Task? _reading;

    // Counts announcements: one that comes while a read is under way may name an entry that read started too early to
    // see, whatever the feed believed (a first read has no epoch to compare with yet), so the read runs again.
    private long _announced;

    public RedisFeed(RedisSessionStore store, string source)
    {
        _store = store;
        Source = source;
        Keys = store.Keys.Source(source);

        // Enough for a response and then some: a session further behind reads its own way (ReadAsync).
        _capacity = Math.Max(2 * store.Options.MaxPendingMessagesPerSession, 128);
        LastUsed = store.TimeProvider.GetTimestamp();
    }

    public string Source { get; }

    public SourceKeys Keys { get; }

    /// <summary>Gets or sets when a poll last used the feed, so an idle one can be dropped.</summary>
    public long LastUsed { get; set; }

    public bool HasWaiters
    {
        get
        {
            using (_lock.EnterScope())
            {
                return _waiting.Count > 0;
            }
        }
    }

    /// <summary>Gets whether the feed was read recently enough to trust without a wake: wakes are fire-and-forget.</summary>
    public bool IsFresh => _epoch is not null && _store.TimeProvider.GetElapsedTime(Volatile.Read(ref _readAt)) < RedisSessionStore.FeedFreshFor;

    public void Watch(RedisPoll poll)
    {
        using (_lock.EnterScope())
        {
            _waiting.Add(poll);
        }
    }

    public void Unwatch(RedisPoll poll)
    {
        using (_lock.EnterScope())
        {
            _waiting.Remove(poll);
        }
    }

    /// <summary>
    /// A publish's wake: the log has entry <paramref name="id"/> of epoch <paramref name="epoch"/>, and starts at
    /// <paramref name="logStart"/>.
    /// </summary>
    public void Announce(string epoch, long id, long logStart)
    {
        using (_lock.EnterScope())
        {
            if (epoch == _epoch)
            {
                Forget(logStart);
            }

            if (epoch == _epoch && id <= _through)
            {
                return;
            }

            _announced++;
            if (epoch == _epoch)
            {
                _last = Math.Max(_last, id);
            }
            else
            {
                // Another epoch: the next read finds out which is current.
                _readAt = long.MinValue;
            }
        }

        _ = RefreshAsync();
    }

    /// <summary>Forgets that the feed was read: a connection came back, and wakes sent meanwhile were lost.</summary>
    public void MarkStale()
    {
        using (_lock.EnterScope())
        {
            _announced++;
            _readAt = long.MinValue;
        }

        WakeWaiting();
    }

    /// <summary>Reads what the log has beyond the cache; one read at a time, which callers share.</summary>
    public Task RefreshAsync()
    {
        using (_lock.EnterScope())
        {
            return _reading ??= ReadNewAsync();
        }
    }

    /// <summary>
    /// Offers what follows <paramref name="cursor"/> ('epoch:id'), at most <paramref name="max"/> entries, from the cache;
    /// null when the cache does not reach back that far (the caller reads the log itself).
    /// </summary>
    public RedisOffer? Offer(string cursor, int max)
    {
        var (epoch, after) = ParseCursor(cursor);
        using (_lock.EnterScope())
        {
            if (_epoch is null || (epoch != _epoch && Number(epoch) > _epochNumber))
            {
                return null;
            }

            // A cursor of an older epoch starts over in this one.
            var from = (epoch == _epoch ? after : 0) + 1;
            if (from > _through)
            {
                // Nothing read beyond the cursor yet; a read under way wakes the poll when it has more.
                return new RedisOffer(Source, _epoch, from, _logStart, []);
            }

            if (_entries.Count == 0 || from < _entries[0].Id)
            {
                // Behind the cache. If the log itself starts later, the cache may hold exactly what is left of it.
                return _entries.Count > 0 && from < _logStart && _entries[0].Id == _logStart ? Slice(_logStart, max) : null;
            }

            return Slice(from, max);
        }
    }

    /// <summary>Reads the log after <paramref name="cursor"/> for one session further behind than the cache.</summary>
    public async Task<RedisOffer> ReadAsync(string cursor, int max)
    {
        var (epoch, after) = ParseCursor(cursor);
        var read = await _store.ReadLogAsync(Keys, after + 1, max).ConfigureAwait(false);
        var logEpoch = (string)read[0]!;
        if (logEpoch != epoch && Number(logEpoch) > Number(epoch))
        {
            read = await _store.ReadLogAsync(Keys, 1, max).ConfigureAwait(false);
            logEpoch = (string)read[0]!;
        }

        var from = (long)read[3];
        var entries = new RedisLogEntry[read.Length - 4];
        for (var i = 0; i < entries.Length; i++)
        {
            entries[i] = RedisLogEntry.Parse(from + i, read[4 + i]);
        }

        return new RedisOffer(Source, logEpoch, from, (long)read[2], entries, More: from + entries.Length - 1 < (long)read[1]);
    }

    public static (string Epoch, long After) ParseCursor(string cursor)
    {
        var colon = cursor.IndexOf(':', StringComparison.Ordinal);
        return (cursor[..colon], long.Parse(cursor.AsSpan(colon + 1), NumberStyles.None, CultureInfo.InvariantCulture));
    }

    private static long Number(string epoch) => long.Parse(epoch, NumberStyles.None, CultureInfo.InvariantCulture);

    private RedisOffer Slice(long from, int max)
    {
        var start = (int)(from - _entries[0].Id);
        var count = Math.Min(max, _entries.Count - start);
        return new RedisOffer(Source, _epoch!, from, _logStart, _entries.GetRange(start, count), More: start + count < _entries.Count || _through < _last);
    }

    private async Task ReadNewAsync()
    {
        await Task.Yield();
        var done = false;
        try
        {
            // Read again while a wake came during the read, or the feed lacks what was announced (a few empty reads at
            // most, should an announcement be wrong).
            for (var empty = 0; !done;)
            {
                long from, announced;
                using (_lock.EnterScope())
                {
                    // A first read only learns where the log ends: a session behind it reads its own way, once.
                    from = _epoch is null ? 1L << 52 : _through + 1;
                    announced = _announced;
                }

                var read = await _store.ReadLogAsync(Keys, from, _capacity).ConfigureAwait(false);
                using (_lock.EnterScope())
                {
                    var count = Apply(read);
                    empty = count > 0 ? 0 : empty + 1;

                    // Decided under the lock a wake takes too: a wake after this starts a read of its own.
                    done = (_through >= _last && _announced == announced) || empty >= 3;
                    if (done)
                    {
                        _reading = null;
                    }
                }

                WakeWaiting();
            }
        }
        catch (Exception ex) when (ex is Stores.DuplexStoreUnavailableException)
        {
            // Polls waiting here answer at their timeout; the next poll reads again.
        }
        finally
        {
            if (!done)
            {
                using (_lock.EnterScope())
                {
                    _reading = null;
                }
            }
        }
    }

    /// <summary>Takes in a read; returns how many entries it brought.</summary>
    private int Apply(RedisResult[] read)
    {
        var epoch = (string)read[0]!;
        var last = (long)read[1];
        var logStart = (long)read[2];
        var from = (long)read[3];
        var count = read.Length - 4;
        if (epoch != _epoch || (count > 0 && from != _through + 1))
        {
            // A new log, or one that moved on beyond what was cached: the cache starts again here.
            _epoch = epoch;
            _epochNumber = Number(epoch);
            _entries.Clear();
            _logStart = logStart;
            _last = last;
            _through = count > 0 ? from - 1 : last;
        }

        for (var i = 0; i < count; i++)
        {
            _entries.Add(RedisLogEntry.Parse(from + i, read[4 + i]));
        }

        Forget(logStart);

        if (_entries.Count > _capacity)
        {
            _entries.RemoveRange(0, _entries.Count - _capacity);
        }

        _through += count;
        _last = Math.Max(_last, last);
        Volatile.Write(ref _readAt, _store.TimeProvider.GetTimestamp());
        return count;
    }

    /// <summary>
    /// The log starts at <paramref name="logStart"/> now: the cache lets go of what the log trimmed, so an offer never
    /// carries an entry the log no longer holds. A session behind it is offered the log's first entry and the log's
    /// start, which tells its take how much it missed (the overflow policy applies), as in memory.
    /// </summary>
    private void Forget(long logStart)
    {
        if (logStart <= _logStart)
        {
            return;
        }

        _logStart = logStart;
        var stale = 0;
        while (stale < _entries.Count && _entries[stale].Id < logStart)
        {
            stale++;
        }

        _entries.RemoveRange(0, stale);
    }

    private void WakeWaiting()
    {
        RedisPoll[] waiting;
        using (_lock.EnterScope())
        {
            if (_waiting.Count == 0)
            {
                return;
            }

            waiting = [.. _waiting];
            _waiting.Clear();
        }

        foreach (var poll in waiting)
        {
            poll.Wake();
        }
    }
}
