namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The script of the <c>away</c> request, on one session's keys (see <see cref="RedisSessionScripts"/> for KEYS and ARGV 1-6),
/// and the one that forgets a remembered open when its session ends.
/// </summary>
internal static class RedisAwayScripts
{
    /// <summary>
    /// The session's page went away: ARGV 7 = the grace period (ms). Its keys now expire within the grace, and 'aw'
    /// marks it so that the end of the departing page's poll does not renew them; the next request (touch()) clears
    /// the mark and gives the keys their inactivity timeout back. Returns {status, reason}.
    /// </summary>
    public const string Away = RedisSessionScripts.Prelude + """
        local st, reason = lookup()
        if st ~= 0 then return {st, reason} end
        local grace = tonumber(ARGV[7])
        redis.call('HSET', sk, 'aw', now + grace)
        for _, k in ipairs({sk, qk, ck}) do
          local ttl = redis.call('PTTL', k)
          if ttl == -1 or ttl > grace then redis.call('PEXPIRE', k, grace) end
        end
        return {0}
        """;

    /// <summary>
    /// KEYS[1] = a remembered open, ARGV[1] = its session's id and '|': deletes it only while it still names that session
    /// (a later open with the same openId, after the session ended, remembers a session of its own there). Returns {deleted}.
    /// </summary>
    public const string ForgetOpen = """
        local v = redis.call('GET', KEYS[1])
        if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then return {redis.call('DEL', KEYS[1])} end
        return {0}
        """;
}
