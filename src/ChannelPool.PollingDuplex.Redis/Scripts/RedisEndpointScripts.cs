namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The scripts of the endpoint-wide keys, all in the endpoint's one hash tag: the session counts its limits hold across
/// the cluster, and the nodes' options. Only opens, first polls, ends and a sweep every few seconds touch them, never a
/// message, so they do not make one shard the endpoint's bottleneck.
/// </summary>
/// <remarks>
/// KEYS: live (zset, score = the session's expiry at the latest), pend (zset of never-polled sessions, score = first-poll
/// deadline), info (hash: session → 'encoding|mode|user'), own (zset: owner → how many sessions it holds), so (hash:
/// session → its owner). Each owner's sessions are a zset named own .. ':' .. owner, built in the script: in the
/// endpoint's hash tag like the rest, so in the same slot.
/// </remarks>
internal static class RedisEndpointScripts
{
    // Removes a session from its owner's set and recounts the owner: the count is the set's size, so it never drifts.
    private const string Disown = """
        local own, so = KEYS[4], KEYS[5]
        local function disown(sid)
          local o = redis.call('HGET', so, sid)
          if not o then return end
          redis.call('HDEL', so, sid)
          local k = own .. ':' .. o
          redis.call('ZREM', k, sid)
          local n = redis.call('ZCARD', k)
          if n > 0 then redis.call('ZADD', own, n, o) else redis.call('ZREM', own, o) end
        end

        """;

    /// <summary>
    /// Makes room for a new session: ARGV 1-9 = now, MaxConcurrentSessions, MaxPendingSessions, its id, its first-poll
    /// deadline, its info, the same deadline to the microsecond (so two opens in one millisecond keep their order), its
    /// owner (a user or an anonymous address) and the owner's limit. An owner at its limit is refused. At
    /// MaxConcurrentSessions the longest-idle session (the earliest expiry) of the owner holding the most gives way, if
    /// that owner holds more than the newcomer's would; at the pending cap, the oldest never-polled session does.
    /// Returns {1} when the endpoint is full, {2} when the owner is, or {0, the id to evict or '', the id displaced or ''}.
    /// </summary>
    public const string Reserve = Disown + """
        local live, pend, info = KEYS[1], KEYS[2], KEYS[3]
        redis.call('ZREMRANGEBYSCORE', pend, '-inf', ARGV[1])
        local owner = ARGV[8]
        local mine = own .. ':' .. owner
        local held = redis.call('ZCARD', mine)
        if held >= tonumber(ARGV[9]) then return {2} end
        local displaced = ''
        if redis.call('ZCOUNT', live, '(' .. ARGV[1], '+inf') >= tonumber(ARGV[2]) then
          local top = redis.call('ZREVRANGE', own, 0, 0, 'WITHSCORES')
          if not top[1] or tonumber(top[2]) <= held + 1 then return {1} end
          local best, bestAt = nil, nil
          for _, sid in ipairs(redis.call('ZRANGE', own .. ':' .. top[1], 0, -1)) do
            local at = tonumber(redis.call('ZSCORE', live, sid) or '0')
            if not best or at < bestAt then best = sid; bestAt = at end
          end
          if not best then return {1} end
          -- It gives way now, so two opens cannot both count its place; the node ends it.
          redis.call('ZREM', live, best)
          redis.call('ZREM', pend, best)
          redis.call('HDEL', info, best)
          disown(best)
          displaced = best
        end
        local victim = ''
        if redis.call('ZCARD', pend) >= tonumber(ARGV[3]) then
          victim = redis.call('ZRANGE', pend, 0, 0)[1]
          redis.call('ZREM', pend, victim)
        end
        redis.call('ZADD', live, ARGV[5], ARGV[4])
        redis.call('ZADD', pend, ARGV[7], ARGV[4])
        redis.call('HSET', info, ARGV[4], ARGV[6])
        redis.call('HSET', so, ARGV[4], owner)
        redis.call('ZADD', mine, ARGV[1], ARGV[4])
        redis.call('ZADD', own, held + 1, owner)
        return {0, victim, displaced}
        """;

    /// <summary>A session's first poll: ARGV 1-2 = its id, its new expiry at the latest. It stops counting as pending.</summary>
    public const string FirstPoll = """
        redis.call('ZREM', KEYS[2], ARGV[1])
        redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ARGV[1])
        return {0}
        """;

    /// <summary>A session ended: ARGV 1 = its id. It leaves the endpoint's sets and its owner's.</summary>
    public const string Leave = Disown + """
        redis.call('ZREM', KEYS[1], ARGV[1])
        redis.call('ZREM', KEYS[2], ARGV[1])
        redis.call('HDEL', KEYS[3], ARGV[1])
        disown(ARGV[1])
        return {0}
        """;

    /// <summary>
    /// Takes the sessions whose expiry passed: ARGV 1-2 = now, most to take. Each is taken by one node only. Returns
    /// {pending, live, (id, info)...}; the caller puts back any that turn out to be alive.
    /// </summary>
    public const string Sweep = """
        local live, pend, info = KEYS[1], KEYS[2], KEYS[3]
        local out = {0, 0}
        for _, sid in ipairs(redis.call('ZRANGEBYSCORE', live, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))) do
          redis.call('ZREM', live, sid)
          redis.call('ZREM', pend, sid)
          out[#out + 1] = sid
          out[#out + 1] = redis.call('HGET', info, sid) or ''
          redis.call('HDEL', info, sid)
        end
        out[1] = redis.call('ZCOUNT', pend, '(' .. ARGV[1], '+inf')
        out[2] = redis.call('ZCOUNT', live, '(' .. ARGV[1], '+inf')
        return out
        """;

    /// <summary>Puts back a session the sweep took that is still alive: ARGV 1-3 = its id, its expiry at the latest, its info.</summary>
    public const string Restore = """
        redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
        redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
        return {0}
        """;

    /// <summary>
    /// A node joins (or renews) the endpoint: KEYS[1] = the nodes hash; ARGV 1-5 = now, the node's id, its entry's
    /// expiry, its options, the hash's lifetime (ms). Entries past their expiry go. Returns {0}, or {1, node, options}
    /// for a live node whose options differ.
    /// </summary>
    public const string Agree = """
        local all = redis.call('HGETALL', KEYS[1])
        for i = 1, #all, 2 do
          local v = all[i + 1]
          local bar = string.find(v, '|', 1, true)
          if tonumber(string.sub(v, 1, bar - 1)) <= tonumber(ARGV[1]) then
            redis.call('HDEL', KEYS[1], all[i])
          elseif all[i] ~= ARGV[2] and string.sub(v, bar + 1) ~= ARGV[4] then
            return {1, all[i], string.sub(v, bar + 1)}
          end
        end
        redis.call('HSET', KEYS[1], ARGV[2], ARGV[3] .. '|' .. ARGV[4])
        redis.call('PEXPIRE', KEYS[1], ARGV[5])
        return {0}
        """;
}
