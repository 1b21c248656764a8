using System.Collections.Concurrent;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// This node's feeds of one endpoint, by source. A wake for a source nobody here reads is ignored: a node reads only
/// the logs its own polls wait on, once each.
/// </summary>
internal sealed class RedisFeeds(RedisSessionStore store)
{
    private readonly ConcurrentDictionary<string, RedisFeed> _feeds = new(StringComparer.Ordinal);

    public int Count => _feeds.Count;

    public RedisFeed Get(string source)
    {
        var feed = _feeds.GetOrAdd(source, static (s, store) => new RedisFeed(store, s), store);
        feed.LastUsed = store.TimeProvider.GetTimestamp();
        return feed;
    }

    public void Announce(string source, string epoch, long id, long logStart)
    {
        if (_feeds.TryGetValue(source, out var feed))
        {
            feed.Announce(epoch, id, logStart);
        }
    }

    public void MarkStale()
    {
        foreach (var feed in _feeds.Values)
        {
            feed.MarkStale();
        }
    }

    /// <summary>Drops feeds no poll here waits on and none used for <paramref name="idle"/>; a later poll reads afresh.</summary>
    public void DropIdle(TimeSpan idle)
    {
        foreach (var (source, feed) in _feeds)
        {
            if (!feed.HasWaiters && store.TimeProvider.GetElapsedTime(feed.LastUsed) > idle)
            {
                _feeds.TryRemove(KeyValuePair.Create(source, feed));
            }
        }
    }
}
