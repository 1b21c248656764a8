namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The scripts of one source: a topic's log and subscribers, or a user's log and sessions. Each touches only that
/// source's keys (one hash tag, so one Redis Cluster slot). A publish writes its message here once, whatever the
/// number of subscribers; polls on every node read it from their sessions' cursors.
/// </summary>
/// <remarks>
/// KEYS: meta (hash: ep = the log's epoch, its creation time in Unix ms; next = the last id given; bytes = what the log
/// holds), log (list of 'publish time|publisher session|entry', oldest first; entry ids are contiguous, so the first
/// is next - length + 1), members (zset scored by membership expiry); Append takes a fourth, the publish's marker.
/// ARGV 1-2: now (Unix ms), how long the source outlives its last publish or membership renewal (ms).
/// </remarks>
internal static class RedisSourceScripts
{
    private const string Prelude = """
        local meta, log, members = KEYS[1], KEYS[2], KEYS[3]
        local now, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])

        local function ensure()
          if redis.call('EXISTS', meta) == 0 then redis.call('HSET', meta, 'ep', ARGV[1], 'next', 0, 'bytes', 0) end
        end

        local function keep()
          redis.call('PEXPIRE', meta, ttl)
          redis.call('PEXPIRE', log, ttl)
          redis.call('PEXPIRE', members, ttl)
        end

        """;

    /// <summary>
    /// Adds or renews a member: ARGV 3-4 = session id, membership expiry (Unix ms). Returns {epoch, last id}: where a
    /// new subscriber's cursor starts.
    /// </summary>
    public const string Join = Prelude + """
        ensure()
        redis.call('ZREMRANGEBYSCORE', members, '-inf', now)
        redis.call('ZADD', members, ARGV[4], ARGV[3])
        keep()
        local f = redis.call('HMGET', meta, 'ep', 'next')
        return {f[1], tonumber(f[2])}
        """;

    /// <summary>
    /// Removes a reader: ARGV 3 = session id. The last reader out (counting only memberships that have not expired)
    /// deletes the source's keys, so a topic nobody reads holds nothing; a later reader starts a new log.
    /// </summary>
    public const string Leave = Prelude + """
        redis.call('ZREM', members, ARGV[3])
        redis.call('ZREMRANGEBYSCORE', members, '-inf', now)
        if redis.call('ZCARD', members) == 0 then redis.call('DEL', meta, log, members) end
        return {0}
        """;

    /// <summary>
    /// Appends one entry, if anyone would read it: ARGV 3-11 = publisher session ('' when it goes to everyone), the
    /// entry ('j'/'b' + payload), entries always kept, bytes kept beyond them, whether the payload is over
    /// MaxMessageSize, the wake channel, the source's name, the marker's lifetime (ms), the publish's sequence number in
    /// its session. The marker (KEYS[4], one per topic and publishing session) holds the highest sequence appended:
    /// a session's sequence numbers only grow, so one key per topic it publishes to covers every repeat. Returns
    /// {0, epoch, id}; {1} when the marker shows it was appended before; {2} when it is too large and has readers
    /// (refused); {3} when nobody reads the source (nothing kept).
    /// </summary>
    public const string Append = Prelude + """
        if KEYS[4] ~= meta then
          local m = redis.call('GET', KEYS[4])
          if m and tonumber(m) >= tonumber(ARGV[11]) then return {1} end
        end
        redis.call('ZREMRANGEBYSCORE', members, '-inf', now)
        local readers = redis.call('ZCARD', members)
        if ARGV[7] == '1' and readers > 0 then return {2} end
        if readers == 0 or ARGV[7] == '1' then return {3} end
        ensure()
        local id = redis.call('HINCRBY', meta, 'next', 1)
        local entry = ARGV[4]
        redis.call('RPUSH', log, ARGV[1] .. '|' .. ARGV[3] .. '|' .. entry)
        local bytes = redis.call('HINCRBY', meta, 'bytes', #entry - 1 + 64)
        local len = redis.call('LLEN', log)
        local keepCount, keepBytes = tonumber(ARGV[5]), tonumber(ARGV[6])
        -- The log keeps what a session may fall behind by: at least MaxPendingMessagesPerSession entries, and up to
        -- MaxPendingBytesPerSession beyond; a cursor behind what is left has overflowed.
        while len > keepCount and bytes > keepBytes do
          local e = redis.call('LPOP', log)
          local a = string.find(e, '|', 1, true)
          local b = string.find(e, '|', a + 1, true)
          bytes = bytes - (#e - b - 1 + 64)
          len = len - 1
        end
        redis.call('HSET', meta, 'bytes', bytes)
        keep()
        if KEYS[4] ~= meta then redis.call('SET', KEYS[4], ARGV[11], 'PX', ARGV[10]) end
        local ep = redis.call('HGET', meta, 'ep')
        redis.call('PUBLISH', ARGV[8], ARGV[9] .. ' ' .. ep .. ' ' .. id)
        return {0, ep, id}
        """;

    /// <summary>
    /// Reads the log from an id: ARGV 3-4 = the first id wanted, most entries. Returns {epoch ('0' when there is no
    /// log), last id, first id held, first id returned, entries...}.
    /// </summary>
    public const string Read = Prelude + """
        local f = redis.call('HMGET', meta, 'ep', 'next')
        if not f[1] then return {'0', 0, 1, 1} end
        local last = tonumber(f[2])
        local first = last - redis.call('LLEN', log) + 1
        local from = math.max(tonumber(ARGV[3]), first)
        local out = {f[1], last, first, from}
        if from <= last then
          for _, e in ipairs(redis.call('LRANGE', log, from - first, from - first + tonumber(ARGV[4]) - 1)) do out[#out + 1] = e end
        end
        return out
        """;
}
