namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The Lua scripts that change session state. Each request step is one script, so Redis runs it whole or not at all:
/// nothing is ever half-written, whichever node runs it and whenever Redis goes away. docs/polling-duplex.md
/// ("Redis store") describes the keys.
/// </summary>
/// <remarks>
/// Every script gets ARGV 1-6 = key prefix, session id, token hash, now (Unix ms), inactivity timeout (ms), first-poll
/// timeout (ms); its own arguments follow from ARGV 7. KEYS[1] is the session's hash, only so that a Redis Cluster
/// routes the script to the endpoint's slot: every key of an endpoint carries the same hash tag.
/// Lookup results: 0 found, -1 unknown, -2 wrong token, -3 ended (the reason follows), -4 bad ack, -5 superseded.
/// </remarks>
internal static class RedisSessionScripts
{
    private const string Prelude = """
        local P = ARGV[1]
        local id = ARGV[2]
        local th = ARGV[3]
        local now = tonumber(ARGV[4])
        local inact = tonumber(ARGV[5])
        local firstPoll = tonumber(ARGV[6])
        local sk = P .. ':s:' .. id
        local qk = P .. ':q:' .. id
        local stk = P .. ':st:' .. id
        local xk = P .. ':x:' .. id
        local live = P .. ':live'
        local pend = P .. ':pend'

        local function lookup()
          local cur = redis.call('HGET', sk, 'th')
          if cur then
            if cur ~= th then return -2, 0 end
            return 0, 0
          end
          local record = redis.call('GET', xk)
          if not record then return -1, 0 end
          local bar = string.find(record, '|', 1, true)
          if string.sub(record, bar + 1) ~= th then return -2, 0 end
          local reason = string.sub(record, 1, bar - 1)
          -- A record with no reason outlived its session's TTL: the session expired.
          if reason == '' then return -3, 2 end
          return -3, tonumber(reason)
        end

        local function touch()
          local ttl = inact
          if redis.call('HGET', sk, 'polled') ~= '1' then ttl = firstPoll end
          redis.call('PEXPIRE', sk, ttl)
          redis.call('PEXPIRE', qk, ttl)
          redis.call('PEXPIRE', stk, ttl)
          redis.call('PEXPIRE', xk, inact * 2)
          redis.call('ZADD', live, now + ttl, id)
          for _, t in ipairs(redis.call('SMEMBERS', stk)) do
            redis.call('PEXPIRE', P .. ':t:' .. t, inact * 2)
          end
        end

        local function finish(sid, reason)
          local s = P .. ':s:' .. sid
          local h = redis.call('HGET', s, 'th')
          if not h then return false end
          local st = P .. ':st:' .. sid
          for _, t in ipairs(redis.call('SMEMBERS', st)) do
            redis.call('SREM', P .. ':t:' .. t, sid)
          end
          redis.call('DEL', s, P .. ':q:' .. sid, st)
          redis.call('SET', P .. ':x:' .. sid, reason .. '|' .. h, 'PX', inact * 2)
          redis.call('ZREM', live, sid)
          redis.call('ZREM', pend, sid)
          return true
        end

        -- Queues one stored copy of payload to every subscriber of topic key tk but except: a reference per subscriber.
        local function fanout(tk, payload, except, maxMessages, maxBytes, policy, messageTtl, woken)
          local subs = redis.call('SMEMBERS', tk)
          local mid = nil
          local size = #payload + 64
          local queued = 0
          for _, sub in ipairs(subs) do
            if sub ~= except then
              local s = P .. ':s:' .. sub
              local f = redis.call('HMGET', s, 'next', 'pb', 'uo', 'pu', 'hs')
              if not f[1] then
                -- The subscriber expired: its TTL took its keys, and this removes its last trace.
                redis.call('SREM', tk, sub)
              else
                local polling = tonumber(f[4]) > now
                local full = ((not polling) and tonumber(f[3]) + 1 > maxMessages) or tonumber(f[2]) + size > maxBytes
                local q = P .. ':q:' .. sub
                if full then
                  if policy == 'fault' then
                    finish(sub, 3)
                  else
                    local nxt = tonumber(f[1])
                    local last = redis.call('LINDEX', q, -1)
                    if last and string.sub(last, 1, 1) == 'g' and nxt - 1 > tonumber(f[5]) then
                      redis.call('LSET', q, -1, 'g' .. (tonumber(string.sub(last, 2)) + 1))
                    else
                      redis.call('RPUSH', q, 'g1')
                      redis.call('HSET', s, 'next', nxt + 1)
                    end
                    redis.call('PEXPIRE', q, redis.call('PTTL', s))
                  end
                else
                  if not mid then
                    mid = redis.call('INCR', P .. ':mid')
                    redis.call('SET', P .. ':m:' .. mid, payload, 'PX', messageTtl)
                  end
                  redis.call('RPUSH', q, 'm' .. mid .. ':' .. size)
                  redis.call('PEXPIRE', q, redis.call('PTTL', s))
                  redis.call('HINCRBY', s, 'next', 1)
                  redis.call('HINCRBY', s, 'pb', size)
                  if not polling then redis.call('HINCRBY', s, 'uo', 1) end
                  queued = queued + 1
                end
                woken[#woken + 1] = sub
              end
            end
          end
          return queued
        end

        """;

    /// <summary>ARGV 7-10: encoding, mode, MaxConcurrentSessions, MaxPendingSessions. Returns 0 opened, 1 too many sessions, 2 too many pending, 3 id taken.</summary>
    public const string Open = Prelude + """
        redis.call('ZREMRANGEBYSCORE', live, '-inf', now)
        redis.call('ZREMRANGEBYSCORE', pend, '-inf', now)
        if redis.call('ZCARD', live) >= tonumber(ARGV[9]) then return 1 end
        if redis.call('ZCARD', pend) >= tonumber(ARGV[10]) then return 2 end
        if redis.call('EXISTS', sk) == 1 or redis.call('EXISTS', xk) == 1 then return 3 end
        redis.call('HSET', sk, 'th', th, 'enc', ARGV[7], 'mode', ARGV[8], 'recv', 0, 'acked', 0, 'hs', 0, 'next', 1, 'pb', 0, 'uo', 0, 'pn', 0, 'pu', 0, 'polled', 0)
        redis.call('SET', xk, '|' .. th)
        touch()
        redis.call('ZADD', pend, now + firstPoll, id)
        return 0
        """;

    /// <summary>Returns {status, reason} or {0, encoding, mode, received}.</summary>
    public const string Find = Prelude + """
        local st, reason = lookup()
        if st ~= 0 then return {st, reason} end
        touch()
        local f = redis.call('HMGET', sk, 'enc', 'mode', 'recv')
        return {0, tonumber(f[1]), tonumber(f[2]), tonumber(f[3])}
        """;

    /// <summary>
    /// Receives one client message: ARGV 7-16 = sequence, op ('' when rejected), topic, notification, echo,
    /// MaxPendingMessagesPerSession, MaxPendingBytesPerSession, overflow policy, message TTL (ms), notification too large.
    /// Returns {status, reason}, {1, received} when the sequence is not the next, {2, sequence} when the notification
    /// is too large for a topic with subscribers (received, and refused), or {0, sequence, queued}.
    /// </summary>
    public const string Receive = Prelude + """
        local st, reason = lookup()
        if st ~= 0 then return {st, reason} end
        local seq = tonumber(ARGV[7])
        local recv = tonumber(redis.call('HGET', sk, 'recv'))
        if seq ~= recv + 1 then return {1, recv} end
        redis.call('HSET', sk, 'recv', seq)
        local op = ARGV[8]
        local tk = P .. ':t:' .. ARGV[9]
        local queued = 0
        local woken = {}
        if op == 'publish' and ARGV[16] == '1' then
          -- Too large for MaxMessageSize: refused (and received) when someone would get it; with nobody, nothing is sent.
          if redis.call('SCARD', tk) > 0 then
            touch()
            return {2, seq}
          end
          op = ''
        end
        if op == 'subscribe' then
          redis.call('SADD', stk, ARGV[9])
          redis.call('SADD', tk, id)
        elseif op == 'unsubscribe' then
          redis.call('SREM', stk, ARGV[9])
          redis.call('SREM', tk, id)
        elseif op == 'publish' then
          local except = id
          if ARGV[11] == '1' then except = '' end
          queued = fanout(tk, ARGV[10], except, tonumber(ARGV[12]), tonumber(ARGV[13]), ARGV[14], tonumber(ARGV[15]), woken)
        end
        if redis.call('EXISTS', sk) == 1 then touch() end
        if #woken > 0 then redis.call('PUBLISH', P .. ':wake', table.concat(woken, ' ')) end
        return {0, seq, queued}
        """;

    /// <summary>
    /// Starts a poll: ARGV 7-8 = ack, the time (Unix ms) until which the poll counts as outstanding. Applies the ack,
    /// supersedes any other poll (waking it through the wake channel) and returns {status, reason} or
    /// {0, poll number, acked, encoding, mode, first poll}.
    /// </summary>
    public const string BeginPoll = Prelude + """
        local st, reason = lookup()
        if st ~= 0 then return {st, reason} end
        local ack = tonumber(ARGV[7])
        local f = redis.call('HMGET', sk, 'acked', 'hs', 'pu', 'polled', 'enc', 'mode')
        local acked = tonumber(f[1])
        if ack > tonumber(f[2]) then return {-4, 0} end
        if ack > acked then
          local n = ack - acked
          local freed = 0
          for _, e in ipairs(redis.call('LRANGE', qk, 0, n - 1)) do
            if string.sub(e, 1, 1) == 'm' then
              freed = freed + tonumber(string.sub(e, string.find(e, ':', 1, true) + 1))
            end
          end
          redis.call('LTRIM', qk, n, -1)
          redis.call('HINCRBY', sk, 'pb', -freed)
          redis.call('HSET', sk, 'acked', ack)
          acked = ack
        end
        local pn = redis.call('HINCRBY', sk, 'pn', 1)
        local first = 0
        if f[4] ~= '1' then
          first = 1
          redis.call('ZREM', pend, id)
        end
        redis.call('HSET', sk, 'pu', ARGV[8], 'uo', 0, 'polled', 1)
        touch()
        if tonumber(f[3]) > now then redis.call('PUBLISH', P .. ':wake', id) end
        return {0, pn, acked, tonumber(f[5]), tonumber(f[6]), first}
        """;

    /// <summary>
    /// Takes frames for a poll: ARGV 7-10 = poll number, cursor, most frames, whether frames end the poll (as EndPoll
    /// does). Returns {status, reason}, {0} when there is nothing, or {1, then per frame: sequence, 'm' and the payload,
    /// or 'g' and how many were missed}.
    /// </summary>
    public const string Take = Prelude + """
        local st, reason = lookup()
        if st ~= 0 then return {st, reason} end
        local f = redis.call('HMGET', sk, 'pn', 'acked', 'hs')
        if f[1] ~= ARGV[7] then return {-5, 0} end
        local acked = tonumber(f[2])
        local start = math.max(0, tonumber(ARGV[8]) - acked)
        local entries = redis.call('LRANGE', qk, start, start + tonumber(ARGV[9]) - 1)
        if #entries == 0 then return {0} end
        local out = {1}
        local seq = acked + start
        for _, e in ipairs(entries) do
          seq = seq + 1
          out[#out + 1] = seq
          if string.sub(e, 1, 1) == 'm' then
            local payload = redis.call('GET', P .. ':m:' .. string.sub(e, 2, string.find(e, ':', 1, true) - 1))
            if payload then
              out[#out + 1] = 'm'
              out[#out + 1] = payload
            else
              -- The stored copy outlived its TTL (twice the inactivity timeout): the client is told it missed it.
              out[#out + 1] = 'g'
              out[#out + 1] = '1'
            end
          else
            out[#out + 1] = 'g'
            out[#out + 1] = string.sub(e, 2)
          end
        end
        if seq > tonumber(f[3]) then redis.call('HSET', sk, 'hs', seq) end
        if ARGV[10] == '1' then
          -- The caller's response ends with these frames: end the poll here and save it a round trip.
          redis.call('HSET', sk, 'pu', 0)
          touch()
        end
        return out
        """;

    /// <summary>Ends a poll: ARGV 7 = its poll number. It stops counting as outstanding unless a newer one replaced it.</summary>
    public const string EndPoll = Prelude + """
        if redis.call('HGET', sk, 'pn') == ARGV[7] then redis.call('HSET', sk, 'pu', 0) end
        if redis.call('EXISTS', sk) == 1 then touch() end
        return 0
        """;

    /// <summary>Ends a session: ARGV 7 = the reason. Returns {status, reason} or {0, 0}.</summary>
    public const string End = Prelude + """
        local st, reason = lookup()
        if st ~= 0 then return {st, reason} end
        finish(id, ARGV[7])
        redis.call('PUBLISH', P .. ':wake', id)
        return {0, 0}
        """;
}
