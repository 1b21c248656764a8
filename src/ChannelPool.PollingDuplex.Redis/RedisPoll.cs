using System.Globalization;
using ChannelPool.PollingDuplex.Stores;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// A poll held on this node of a session in Redis: which one it is (a newer number on any node supersedes it), how far
/// its response has got, the session's cursor in each source it reads, and what it waits on: the feeds of those
/// sources on this node, and the session's own wake (a direct send, a new subscription, a newer poll, the end).
/// </summary>
internal sealed class RedisPoll : DuplexPoll
{
    private readonly RedisSessionStore _store;
    private readonly string _userId;
    private readonly List<RedisFeed> _watching = [];
    private Dictionary<string, string> _cursors;
    private List<DuplexFrame>? _ready;
    private long _cursor;

    // Armed before each look, so a wake that comes while the look runs is not missed.
    private TaskCompletionSource? _signal;
    private int _sessionWoken;
    private bool _tookFrames;

    public RedisPoll(RedisSessionStore store, SessionKeys keys, string sessionId, string tokenHash, string userId, long number, long acked, DuplexEncoding encoding, PollingDuplexMode mode, List<DuplexFrame> ready, Dictionary<string, string> cursors)
        : base(sessionId, encoding, mode)
    {
        _store = store;
        Keys = keys;
        TokenHash = tokenHash;
        _userId = userId;
        Number = number;
        _cursor = acked;
        _ready = ready.Count > 0 ? ready : null;
        _tookFrames = ready.Count > 0;
        _cursors = cursors;
    }

    public string TokenHash { get; }

    /// <summary>Gets the session's keys, made once for the poll's every script.</summary>
    public SessionKeys Keys { get; }

    public long Number { get; }

    public string UserId => _userId;

    /// <summary>Wakes the poll: a feed it waits on has news.</summary>
    public void Wake() => _signal?.TrySetResult();

    /// <summary>Wakes the poll for a change to the session itself, which only a look at the session shows.</summary>
    public void WakeSession()
    {
        Volatile.Write(ref _sessionWoken, 1);
        _signal?.TrySetResult();
    }

    /// <inheritdoc />
    protected override async ValueTask<DuplexTakeResult> TakeAsync(List<DuplexFrame> frames, int maxFrames, CancellationToken cancellationToken)
    {
        if (_signal is { Task.IsCompleted: false } armed)
        {
            // Every change this poll could take wakes it, and none came since the last look: no round trip.
            return DuplexTakeResult.Waiting(armed.Task);
        }

        var signal = _signal = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        WatchFeeds();
        if (_ready is { } ready)
        {
            // What the poll's start took from the queue: redeliveries and direct sends.
            var count = Math.Min(maxFrames, ready.Count);
            frames.AddRange(ready.GetRange(0, count));
            ready.RemoveRange(0, count);
            _ready = ready.Count > 0 ? ready : null;
            _cursor = frames[^1].Sequence;

            // The poll's start looked at the queue only: the response's next take looks at the logs too.
            signal.TrySetResult();
            return DuplexTakeResult.Frames;
        }

        var looked = Interlocked.Exchange(ref _sessionWoken, 0) == 1;
        for (var attempt = 0; attempt < 3; attempt++)
        {
            var offers = await OffersAsync(_store.OfferCap(maxFrames)).ConfigureAwait(false);
            if (offers.Count == 0 && !looked)
            {
                return DuplexTakeResult.Waiting(signal.Task);
            }

            looked = false;
            var before = frames.Count;
            var sources = _cursors.Count;
            var take = await _store.TakeAsync(this, _cursor, offers, maxFrames, frames).ConfigureAwait(false);
            if (take.Status != DuplexTakeStatus.Frames)
            {
                return take;
            }

            if (frames.Count > before)
            {
                _cursor = frames[^1].Sequence;
                _tookFrames = true;
                return DuplexTakeResult.Frames;
            }

            // Nothing taken: the session's cursors had moved, or it has new sources (a subscribe), or its held bytes are
            // full. The script returned its cursors: wait on every source it reads now, and look once more if they changed.
            var watched = _watching.Count;
            WatchFeeds();
            if (offers.Count == 0 && _watching.Count == watched && _cursors.Count == sources)
            {
                break;
            }
        }

        return DuplexTakeResult.Waiting(signal.Task);
    }

    /// <summary>Takes the session's cursors a script returned: all of them, or those that moved.</summary>
    public void SetCursors(Dictionary<string, string> cursors, bool replace)
    {
        if (replace)
        {
            _cursors = cursors;
            return;
        }

        foreach (var (source, cursor) in cursors)
        {
            _cursors[source] = cursor;
        }
    }

    /// <inheritdoc />
    protected override async ValueTask EndAsync(CancellationToken cancellationToken)
    {
        _store.Forget(this);
        foreach (var feed in _watching)
        {
            feed.Unwatch(this);
        }

        _watching.Clear();

        // A poll that took frames told Redis when it ends; one that took none says so now.
        if (!_tookFrames)
        {
            try
            {
                await _store.EndPollAsync(this).ConfigureAwait(false);
            }
            catch (DuplexStoreUnavailableException)
            {
                // The poll stops counting as outstanding at its deadline anyway.
            }
        }
    }

    private void WatchFeeds()
    {
        foreach (var source in _cursors.Keys)
        {
            var feed = _store.Feeds.Get(source);
            if (!_watching.Contains(feed))
            {
                _watching.Add(feed);
            }

            feed.Watch(this);
        }
    }

    /// <summary>What each source has after the session's cursor: from this node's feed, or read for this session when it is further behind.</summary>
    private async Task<List<RedisOffer>> OffersAsync(int max)
    {
        var offers = new List<RedisOffer>(_cursors.Count);
        foreach (var (source, cursor) in _cursors)
        {
            var feed = _store.Feeds.Get(source);
            if (!feed.IsFresh)
            {
                await feed.RefreshAsync().ConfigureAwait(false);
            }

            var offer = feed.Offer(cursor, max) ?? await feed.ReadAsync(cursor, max).ConfigureAwait(false);
            if (offer.Entries.Count > 0)
            {
                offers.Add(offer);
            }
        }

        return offers;
    }

    public override string ToString() => string.Create(CultureInfo.InvariantCulture, $"poll {Number} of {SessionId} at {_cursor}");
}
