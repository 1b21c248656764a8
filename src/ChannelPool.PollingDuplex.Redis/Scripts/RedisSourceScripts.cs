namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The scripts of one source: a topic's log and subscribers, or a user's log and sessions. Each touches only that
/// source's keys (one hash tag, so one Redis Cluster slot). A publish writes its message here once, whatever the
/// number of subscribers; polls on every node read it from their sessions' cursors.
/// </summary>
/// <remarks>
/// KEYS: meta (hash: ep = the log's epoch, its creation time in Unix ms; next = the last id given; bytes = what the log
/// holds), log (list of 'publish time|publisher session|entry', oldest first; entry ids are contiguous, so the first
/// is next - length + 1), members (zset scored by membership expiry), taken (zset: each member's last id taken, as its
/// renewals report it); Append takes a fifth, the publish's marker.
/// ARGV 1-2: now (Unix ms), how long the source outlives its last publish or membership renewal (ms).
/// </remarks>
internal static class RedisSourceScripts
{
    private const string Prelude = """
        local meta, log, members, taken = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
        local now, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])

        local function ensure()
          if redis.call('EXISTS', meta) == 0 then redis.call('HSET', meta, 'ep', ARGV[1], 'next', 0, 'bytes', 0) end
        end

        local function keep()
          redis.call('PEXPIRE', meta, ttl)
          redis.call('PEXPIRE', log, ttl)
          redis.call('PEXPIRE', members, ttl)
          redis.call('PEXPIRE', taken, ttl)
        end

        -- Drops memberships that expired, and what they reported taking.
        local function prune()
          local gone = redis.call('ZRANGEBYSCORE', members, '-inf', now)
          if #gone > 0 then
            redis.call('ZREMRANGEBYSCORE', members, '-inf', now)
            redis.call('ZREM', taken, unpack(gone))
          end
          return redis.call('ZCARD', members)
        end

        -- Removes the n oldest entries, keeping the byte count; returns the bytes left.
        local function free(n, bytes)
          for _, e in ipairs(redis.call('LPOP', log, n)) do
            local a = string.find(e, '|', 1, true)
            local b = string.find(e, '|', a + 1, true)
            bytes = bytes - (#e - b - 1 + 64)
          end
          return bytes
        end

        -- Frees what every reader has taken (the taken entries wait in each session's own queue until acknowledged),
        -- once every reader has reported: a reader that has not yet (it joined before the first entry) holds all.
        -- Returns the log's length and bytes after.
        local function release(readers, last)
          local len = redis.call('LLEN', log)
          local bytes = tonumber(redis.call('HGET', meta, 'bytes') or '0')
          if len == 0 or readers == 0 or redis.call('ZCARD', taken) < readers then return len, bytes end
          local low = redis.call('ZRANGE', taken, 0, 0, 'WITHSCORES')
          local n = math.min(len, tonumber(low[2]) - (last - len))
          if n > 0 then
            bytes = free(n, bytes)
            len = len - n
            redis.call('HSET', meta, 'bytes', bytes)
          end
          return len, bytes
        end

        """;

    /// <summary>
    /// Adds or renews a member: ARGV 3-5 = session id, membership expiry (Unix ms), and for a renewal the member's
    /// cursor ('epoch:last id taken'; '' for a new member, which starts at the log's end). Records what the member has
    /// taken and frees what every member has. Returns {epoch, last id}: where a new subscriber's cursor starts.
    /// </summary>
    public const string Join = Prelude + """
        ensure()
        prune()
        redis.call('ZADD', members, ARGV[4], ARGV[3])
        local f = redis.call('HMGET', meta, 'ep', 'next')
        local last = tonumber(f[2])
        -- A log that never had an entry has nothing to free: nothing is recorded for it.
        if last > 0 then
          if ARGV[5] == '' then
            -- A new member starts at the end; a repeated subscribe keeps what the member reported.
            redis.call('ZADD', taken, 'NX', last, ARGV[3])
          else
            local colon = string.find(ARGV[5], ':', 1, true)
            -- A cursor of another epoch starts over in this one.
            local at = string.sub(ARGV[5], 1, colon - 1) == f[1] and math.min(last, tonumber(string.sub(ARGV[5], colon + 1))) or 0
            redis.call('ZADD', taken, at, ARGV[3])
          end
          release(redis.call('ZCARD', members), last)
        end
        keep()
        return {f[1], last}
        """;

    /// <summary>
    /// Removes a reader: ARGV 3 = session id. The last reader out (counting only memberships that have not expired)
    /// deletes the source's keys, so a topic nobody reads holds nothing; a later reader starts a new log.
    /// </summary>
    public const string Leave = Prelude + """
        redis.call('ZREM', members, ARGV[3])
        redis.call('ZREM', taken, ARGV[3])
        local readers = prune()
        if readers == 0 then
          redis.call('DEL', meta, log, members, taken)
        elseif redis.call('EXISTS', meta) == 1 then
          release(readers, tonumber(redis.call('HGET', meta, 'next')))
        end
        return {0}
        """;

    /// <summary>
    /// Appends one entry, if anyone would read it: ARGV 3-10 = publisher session ('' when it goes to everyone), the
    /// entry ('j'/'b' + payload), the bytes a log may hold (MaxPendingBytesPerSession), whether the payload is over
    /// MaxMessageSize, the wake channel, the source's name, the marker's lifetime (ms), the publish's sequence number in
    /// its session. The marker (KEYS[5], one per topic and publishing session) holds the highest sequence appended:
    /// a session's sequence numbers only grow, so one key per topic it publishes to covers every repeat. The wake
    /// names the log's first id too, so no node's feed offers an entry the log no longer holds. Returns
    /// {0, epoch, id}; {1} when the marker shows it was appended before; {2} when it is too large and has readers
    /// (refused); {3} when nobody reads the source (nothing kept).
    /// </summary>
    public const string Append = Prelude + """
        if KEYS[5] ~= meta then
          local m = redis.call('GET', KEYS[5])
          if m and tonumber(m) >= tonumber(ARGV[10]) then return {1} end
        end
        local readers = prune()
        if ARGV[6] == '1' and readers > 0 then return {2} end
        if readers == 0 or ARGV[6] == '1' then return {3} end
        ensure()
        local id = redis.call('HINCRBY', meta, 'next', 1)
        local entry = ARGV[4]
        redis.call('RPUSH', log, ARGV[1] .. '|' .. ARGV[3] .. '|' .. entry)
        redis.call('HINCRBY', meta, 'bytes', #entry - 1 + 64)
        local len, bytes = release(readers, id)
        -- The same rule as a session's buffer in memory: a reader more than MaxPendingBytesPerSession behind has
        -- overflowed (a cursor behind the log's first id). The newest entry always fits (the limit exceeds MaxMessageSize).
        local keepBytes = tonumber(ARGV[5])
        while len > 1 and bytes > keepBytes do
          bytes = free(1, bytes)
          len = len - 1
        end
        redis.call('HSET', meta, 'bytes', bytes)
        keep()
        if KEYS[5] ~= meta then redis.call('SET', KEYS[5], ARGV[10], 'PX', ARGV[9]) end
        local ep = redis.call('HGET', meta, 'ep')
        redis.call('PUBLISH', ARGV[7], ARGV[8] .. ' ' .. ep .. ' ' .. id .. ' ' .. (id - len + 1))
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
