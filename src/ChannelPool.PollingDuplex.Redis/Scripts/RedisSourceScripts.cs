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

        -- Where a member's cursor ('epoch:last id taken') stands in this log: a cursor of another epoch starts over.
        local function at(cursor, ep, last)
          local colon = string.find(cursor, ':', 1, true)
          return string.sub(cursor, 1, colon - 1) == ep and math.min(last, tonumber(string.sub(cursor, colon + 1))) or 0
        end

        -- What the log (len entries through id last) holds after id n for the member sid, as its take would count
        -- it: {messages published after since ('' counts none: a poll is outstanding), bytes (payload + 64), 1 when
        -- the log no longer holds the entry after n (the member overflowed)}. Its own publishes are skipped, and so
        -- are binary ones for a text session (text = '1'): its take skips those too. Counting stops past either
        -- limit, enough to know it is over; a member that has taken everything costs no read.
        local function behind(sid, n, last, len, since, text, maxMessages, maxBytes)
          local first = last - len + 1
          if n + 1 < first then return 0, 0, 1 end
          local count, bytes = 0, 0
          since = since ~= '' and tonumber(since) or nil
          local i = n + 1 - first
          while i < len do
            for _, e in ipairs(redis.call('LRANGE', log, i, i + 255)) do
              local a = string.find(e, '|', 1, true)
              local b = string.find(e, '|', a + 1, true)
              if string.sub(e, a + 1, b - 1) ~= sid and not (text == '1' and string.sub(e, b + 1, b + 1) == 'b') then
                bytes = bytes + (#e - b - 1 + 64)
                if since and tonumber(string.sub(e, 1, a - 1)) > since then count = count + 1 end
              end
            end
            if count > maxMessages or bytes > maxBytes then break end
            i = i + 256
          end
          return count, bytes, 0
        end

        """;

    /// <summary>
    /// Adds or renews a member: ARGV 3-5 = session id, membership expiry (Unix ms), and for a renewal the member's
    /// cursor ('epoch:last id taken'; '' for a new member, which starts at the log's end). Records what the member has
    /// taken and frees what every member has. A renewal also counts what the log holds after the cursor (see
    /// <see cref="Behind"/>; ARGV 6-9 = since, text, MaxPendingMessagesPerSession, MaxPendingBytesPerSession), for
    /// its session's overflow check. Returns {epoch, last id} (where a new subscriber's cursor starts), and for a
    /// renewal {epoch, last id, messages, bytes, overflowed}.
    /// </summary>
    public const string Join = Prelude + """
        ensure()
        prune()
        redis.call('ZADD', members, ARGV[4], ARGV[3])
        local f = redis.call('HMGET', meta, 'ep', 'next')
        local last = tonumber(f[2])
        local out = {f[1], last}
        -- A log that never had an entry has nothing to free: nothing is recorded for it.
        if last > 0 then
          if ARGV[5] == '' then
            -- A new member starts at the end; a repeated subscribe keeps what the member reported.
            redis.call('ZADD', taken, 'NX', last, ARGV[3])
          else
            local n = at(ARGV[5], f[1], last)
            redis.call('ZADD', taken, n, ARGV[3])
            local len = release(redis.call('ZCARD', members), last)
            local count, bytes, over = behind(ARGV[3], n, last, len, ARGV[6], ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9]))
            out = {f[1], last, count, bytes, over}
          end
        end
        keep()
        return out
        """;

    /// <summary>
    /// Counts what the log holds after a member's cursor, changing nothing (a session that makes no request is checked
    /// without renewing its membership): ARGV 3-8 = session id, its cursor, since (count the messages published after
    /// it, Unix ms; '' for none: a poll is outstanding), text ('1' skips binary entries), MaxPendingMessagesPerSession,
    /// MaxPendingBytesPerSession. Returns {epoch ('0' when there is no log), last id, messages, bytes, overflowed}.
    /// </summary>
    public const string Behind = Prelude + """
        local f = redis.call('HMGET', meta, 'ep', 'next')
        if not f[1] or redis.call('ZSCORE', members, ARGV[3]) == false then return {'0', 0, 0, 0, 0} end
        local last = tonumber(f[2])
        if last == 0 then return {f[1], 0, 0, 0, 0} end
        local count, bytes, over = behind(ARGV[3], at(ARGV[4], f[1], last), last, redis.call('LLEN', log), ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8]))
        return {f[1], last, count, bytes, over}
        """;

    /// <summary>
    /// The gap policy's release: ARGV 3-4 = session id, 'epoch:id'. Records the member as having taken through that
    /// id (never less than it reported), without renewing it or moving its session's cursor, so the log frees what
    /// only it held; its next take finds its cursor behind the log and reports the exact gap. Returns {0}.
    /// </summary>
    public const string Skip = Prelude + """
        local f = redis.call('HMGET', meta, 'ep', 'next')
        if not f[1] or redis.call('ZSCORE', members, ARGV[3]) == false then return {0} end
        local last = tonumber(f[2])
        local n = at(ARGV[4], f[1], last)
        if n > tonumber(redis.call('ZSCORE', taken, ARGV[3]) or '-1') then
          redis.call('ZADD', taken, n, ARGV[3])
          release(prune(), last)
        end
        return {0}
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
