namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The scripts of the endpoint-wide keys, all in the endpoint's one hash tag: the session counts its limits hold across
/// the cluster, and the nodes' options. Only opens, first polls, ends and a sweep every few seconds touch them, never a
/// message, so they do not make one shard the endpoint's bottleneck.
/// </summary>
/// <remarks>KEYS: live (zset, score = the session's expiry at the latest), pend (zset of never-polled sessions, score = first-poll deadline), info (hash: session → 'encoding|mode|user').</remarks>
internal static class RedisEndpointScripts
{
    /// <summary>
    /// Makes room for a new session: ARGV 1-7 = now, MaxConcurrentSessions, MaxPendingSessions, its id, its first-poll
    /// deadline, its info, and the same deadline to the microsecond (so two opens in one millisecond keep their order).
    /// At the pending cap, the oldest never-polled session gives way rather than the newcomer.
    /// Returns {1} when the endpoint is full, or {0, the id to evict or ''}.
    /// </summary>
    public const string Reserve = """
        local live, pend, info = KEYS[1], KEYS[2], KEYS[3]
        redis.call('ZREMRANGEBYSCORE', pend, '-inf', ARGV[1])
        if redis.call('ZCOUNT', live, '(' .. ARGV[1], '+inf') >= tonumber(ARGV[2]) then return {1} end
        local victim = ''
        if redis.call('ZCARD', pend) >= tonumber(ARGV[3]) then
          victim = redis.call('ZRANGE', pend, 0, 0)[1]
          redis.call('ZREM', pend, victim)
        end
        redis.call('ZADD', live, ARGV[5], ARGV[4])
        redis.call('ZADD', pend, ARGV[7], ARGV[4])
        redis.call('HSET', info, ARGV[4], ARGV[6])
        return {0, victim}
        """;

    /// <summary>A session's first poll: ARGV 1-2 = its id, its new expiry at the latest. It stops counting as pending.</summary>
    public const string FirstPoll = """
        redis.call('ZREM', KEYS[2], ARGV[1])
        redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ARGV[1])
        return {0}
        """;

    /// <summary>A session ended: ARGV 1 = its id.</summary>
    public const string Leave = """
        redis.call('ZREM', KEYS[1], ARGV[1])
        redis.call('ZREM', KEYS[2], ARGV[1])
        redis.call('HDEL', KEYS[3], ARGV[1])
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
