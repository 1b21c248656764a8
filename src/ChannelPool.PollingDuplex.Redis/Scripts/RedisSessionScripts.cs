namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The scripts that change one session. Each touches only the session's keys (one hash tag, so one Redis Cluster slot),
/// and Redis runs it whole or not at all: nothing is ever half-written, whichever node runs it and whenever Redis goes
/// away.
/// </summary>
/// <remarks>
/// KEYS: the session's hash, queue, cursors and record (<see cref="SessionKeys"/>). ARGV 1-6: session id, token hash,
/// user id ('' when anonymous), now (Unix ms), inactivity timeout (ms), the wake channel; a script's own arguments
/// follow from ARGV 7. Lookup results: 0 found, -1 unknown, -2 wrong token, -3 ended (the reason follows), -4 ack
/// beyond what was sent, -5 superseded, -6 wrong user.
/// The hash holds th (token hash), uid, enc, mode, recv, acked, hs (highest sequence sent), next (next sequence),
/// pb (bytes held), uo (frames queued directly while no poll was outstanding), pn (poll number), pu (the outstanding
/// poll ends by, Unix ms), fpd (first-poll deadline; 0 once polled), wins (the last 16 stretches without a poll, as
/// 'from,to,counted;...': what a session may fall behind by is counted in them), mr (memberships renewed at), chk (a
/// sweep's overflow check claimed at), rc (a handler's claim on a message), aw (its page went away: see RedisAwayScripts).
/// Queue entries: 'j' + JSON, 'b' + bytes, or 'g' + how many messages a gap stands for. Cursors: source → 'epoch:id'.
/// </remarks>
internal static class RedisSessionScripts
{
    internal const string Prelude = """
        local sk, qk, ck, xk = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
        local id, th, uid = ARGV[1], ARGV[2], ARGV[3]
        local now, inact, wake = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]

        -- Checks the token and the user in one read, which also brings the named fields (from f[3]).
        local function lookup(...)
          local f = redis.call('HMGET', sk, 'th', 'uid', ...)
          if f[1] then
            if f[1] ~= th then return -2, 0 end
            if f[2] ~= uid then return -6, 0 end
            return 0, 0, f
          end
          local record = redis.call('GET', xk)
          if not record then return -1, 0 end
          local a = string.find(record, '|', 1, true)
          local b = string.find(record, '|', a + 1, true)
          if string.sub(record, a + 1, b - 1) ~= th then return -2, 0 end
          if string.sub(record, b + 1) ~= uid then return -6, 0 end
          local reason = string.sub(record, 1, a - 1)
          -- A record with no reason outlived its session's keys: the session expired.
          if reason == '' then return -3, 2 end
          return -3, tonumber(reason)
        end

        -- Until its first poll a session lives to its first-poll deadline, which nothing but a poll moves; after it,
        -- for the inactivity timeout from each request.
        -- The cursors outlive the rest by the inactivity timeout, so the node whose sweep finds the session expired can
        -- still read its sources and leave them; it then deletes them.
        local function touch(fpd)
          fpd = tonumber(fpd or redis.call('HGET', sk, 'fpd'))
          for _, k in ipairs({sk, qk}) do
            if fpd > 0 then redis.call('PEXPIREAT', k, fpd) else redis.call('PEXPIRE', k, inact) end
          end
          if fpd > 0 then redis.call('PEXPIREAT', ck, fpd + inact) else redis.call('PEXPIRE', ck, inact * 2) end
          redis.call('PEXPIRE', xk, inact * 2)
          -- A request came: whatever page sent 'away' came back (RedisSessionStore.Away.cs).
          redis.call('HDEL', sk, 'aw')
        end

        -- A key this script created outside touch() expires with the session, without renewing it.
        local function keep(k)
          local ttl = redis.call('PTTL', sk)
          if ttl > 0 then redis.call('PEXPIRE', k, ttl) end
        end

        -- Ends the session: its keys go, its record says why. Appends its user, encoding, mode and sources to out, for
        -- the node to tell the application and leave the endpoint's, topics' and user's sets.
        local function finish(reason, out)
          local f = redis.call('HMGET', sk, 'th', 'uid', 'enc', 'mode')
          if not f[1] then return false end
          out[#out + 1] = f[2]
          out[#out + 1] = tonumber(f[3])
          out[#out + 1] = tonumber(f[4])
          for _, source in ipairs(redis.call('HKEYS', ck)) do out[#out + 1] = source end
          redis.call('DEL', sk, qk, ck)
          redis.call('SET', xk, reason .. '|' .. f[1] .. '|' .. f[2], 'PX', inact * 2)
          redis.call('PUBLISH', wake, 's ' .. id)
          return true
        end

        -- Appends up to limit queued frames from queue index start: sequence, kind, body.
        local function queued(out, acked, start, limit)
          local entries = redis.call('LRANGE', qk, start, start + limit - 1)
          for i, e in ipairs(entries) do
            out[#out + 1] = acked + start + i
            out[#out + 1] = string.sub(e, 1, 1)
            out[#out + 1] = string.sub(e, 2)
          end
          return #entries
        end

        local function cursors(out)
          local all = redis.call('HGETALL', ck)
          out[#out + 1] = #all / 2
          for _, v in ipairs(all) do out[#out + 1] = v end
        end

        """;

    /// <summary>
    /// Creates a session: ARGV 7-11 = encoding, mode, first-poll deadline (Unix ms), the user's source ('' when
    /// anonymous) and the cursor there (its log's end). Returns {0}, or {3} when the id is taken.
    /// </summary>
    public const string Create = Prelude + """
        if redis.call('EXISTS', sk) == 1 or redis.call('EXISTS', xk) == 1 then return {3} end
        redis.call('HSET', sk, 'th', th, 'uid', uid, 'enc', ARGV[7], 'mode', ARGV[8], 'recv', 0, 'acked', 0, 'hs', 0, 'next', 1,
          'pb', 0, 'uo', 0, 'pn', 0, 'pu', ARGV[4], 'fpd', ARGV[9], 'wins', '', 'mr', ARGV[4])
        if ARGV[10] ~= '' then redis.call('HSET', ck, ARGV[10], ARGV[11]) end
        redis.call('SET', xk, '|' .. th .. '|' .. uid)
        touch()
        return {0}
        """;

    /// <summary>
    /// Finds a session for a send; counts as activity (not past the first-poll deadline). Returns {status, reason} or
    /// {0, encoding, mode, received, memberships renewed at, when its last poll ended or ends (Unix ms)}.
    /// </summary>
    public const string Find = Prelude + """
        local st, reason, f = lookup('enc', 'mode', 'recv', 'mr', 'fpd', 'pu')
        if st ~= 0 then return {st, reason} end
        touch(f[7])
        return {0, tonumber(f[3]), tonumber(f[4]), tonumber(f[5]), tonumber(f[6]), tonumber(f[8])}
        """;

    /// <summary>
    /// Receives one client message, if its sequence is the next: ARGV 7-11 = sequence, what it does to the session's
    /// sources ('', 'sub', 'unsub'), the source, the cursor a subscribe starts at, and MaxSubscriptionsPerSession.
    /// Returns {status, reason}, {1, received} when the sequence is not the next, {5, sequence} when a subscribe to a
    /// new topic would pass the limit (received, nothing subscribed), or {0, sequence}.
    /// </summary>
    public const string Receive = Prelude + """
        local st, reason = lookup()
        if st ~= 0 then return {st, reason} end
        local seq = tonumber(ARGV[7])
        local recv = tonumber(redis.call('HGET', sk, 'recv'))
        if seq ~= recv + 1 then return {1, recv} end
        local op = ARGV[8]
        if op == 'sub' and redis.call('HEXISTS', ck, ARGV[9]) == 0 then
          -- The cursors are the session's topics, and its user's log when it has a user.
          local topics = redis.call('HLEN', ck)
          if uid ~= '' then topics = topics - 1 end
          if topics >= tonumber(ARGV[11]) then
            redis.call('HSET', sk, 'recv', seq)
            touch()
            return {5, seq}
          end
        end
        redis.call('HSET', sk, 'recv', seq)
        if op == 'sub' then
          -- A repeated subscribe keeps its cursor: nothing is delivered twice.
          redis.call('HSETNX', ck, ARGV[9], ARGV[10])
        elseif op == 'unsub' then
          redis.call('HDEL', ck, ARGV[9])
        end
        touch()
        -- A poll held elsewhere learns the session's new sources.
        if op ~= '' then redis.call('PUBLISH', wake, 's ' .. id) end
        return {0, seq}
        """;

    /// <summary>
    /// Claims a message for the application's handler, so two requests carrying it (on two nodes) do not both run it:
    /// ARGV 7-9 = sequence, the claimant's nonce, the claim's end (Unix ms). Returns {status, reason}, {1, received}
    /// when the sequence is not the next, {4, received} while another live claim holds it, or {0, received}.
    /// </summary>
    public const string Claim = Prelude + """
        local st, reason = lookup()
        if st ~= 0 then return {st, reason} end
        local seq = tonumber(ARGV[7])
        local f = redis.call('HMGET', sk, 'recv', 'rc')
        local recv = tonumber(f[1])
        if seq ~= recv + 1 then return {1, recv} end
        if f[2] then
          local a = string.find(f[2], '|', 1, true)
          local b = string.find(f[2], '|', a + 1, true)
          if tonumber(string.sub(f[2], a + 1, b - 1)) > now and string.sub(f[2], b + 1) ~= ARGV[8] then return {4, recv} end
        end
        redis.call('HSET', sk, 'rc', ARGV[7] .. '|' .. ARGV[9] .. '|' .. ARGV[8])
        touch()
        return {0, recv}
        """;

    /// <summary>
    /// Settles a claim: ARGV 7-9 = sequence, nonce, whether the message counts as received ('1': handled or refused;
    /// '0': the handler failed, so the client may send it again). Returns {status, reason} or {0, received}.
    /// </summary>
    public const string Settle = Prelude + """
        local f = redis.call('HMGET', sk, 'recv', 'rc')
        if not f[1] then
          local st, reason = lookup()
          return {st, reason}
        end
        local recv = tonumber(f[1])
        if f[2] and string.sub(f[2], -#ARGV[8]) == ARGV[8] then
          redis.call('HDEL', sk, 'rc')
          if ARGV[9] == '1' and recv == tonumber(ARGV[7]) - 1 then
            redis.call('HSET', sk, 'recv', ARGV[7])
            recv = recv + 1
          end
        end
        return {0, recv}
        """;

    /// <summary>
    /// Queues one message from the server side, within the limits: ARGV 7-10 = the entry ('j' or 'b' + payload),
    /// MaxPendingMessagesPerSession, MaxPendingBytesPerSession, overflow policy ('fault' or 'gap'). Never counts as
    /// activity. Returns {-1} for no session, {-8} for bytes on a text session, {0} queued, {1} dropped behind a gap, or
    /// {2, user, encoding, mode, sources...} when the overflow ended the session.
    /// </summary>
    public const string Send = Prelude + """
        local f = redis.call('HMGET', sk, 'next', 'pb', 'uo', 'pu', 'hs', 'enc')
        if not f[1] then return {-1} end
        local entry = ARGV[7]
        if string.sub(entry, 1, 1) == 'b' and f[6] == '0' then return {-8} end
        local size = #entry - 1 + 64
        local polling = tonumber(f[4]) > now
        if ((not polling) and tonumber(f[3]) + 1 > tonumber(ARGV[8])) or tonumber(f[2]) + size > tonumber(ARGV[9]) then
          if ARGV[10] == 'fault' then
            local out = {2}
            finish(3, out)
            return out
          end
          -- Dropped: a gap the client has not been sent yet grows; otherwise a new one starts.
          local nxt = tonumber(f[1])
          local last = redis.call('LINDEX', qk, -1)
          if last and string.sub(last, 1, 1) == 'g' and nxt - 1 > tonumber(f[5]) then
            redis.call('LSET', qk, -1, 'g' .. (tonumber(string.sub(last, 2)) + 1))
          else
            redis.call('RPUSH', qk, 'g1')
            redis.call('HSET', sk, 'next', nxt + 1)
            keep(qk)
          end
          redis.call('PUBLISH', wake, 's ' .. id)
          return {1}
        end
        redis.call('RPUSH', qk, entry)
        redis.call('HINCRBY', sk, 'next', 1)
        redis.call('HINCRBY', sk, 'pb', size)
        if not polling then redis.call('HINCRBY', sk, 'uo', 1) end
        keep(qk)
        redis.call('PUBLISH', wake, 's ' .. id)
        return {0}
        """;

    /// <summary>
    /// Starts a poll: ARGV 7-10 = ack, when the poll ends at the latest (Unix ms), most frames a multiple-message
    /// response carries (a single-message one carries one, and ends with it), when a multiple-message response with
    /// frames ends at the latest (its batch window). Applies the ack, supersedes any other poll (waking it), ends the pending state, closes the
    /// window without a poll, and takes what is queued after the ack (redeliveries and direct sends). Returns
    /// {status, reason} or {0, poll number, acked, encoding, mode, first poll, memberships renewed at, highest sent
    /// before, frame count, frames (sequence, kind, body)..., cursor count, (source, cursor)...}.
    /// </summary>
    public const string BeginPoll = Prelude + """
        local st, reason, g = lookup('acked', 'hs', 'pu', 'fpd', 'enc', 'mode', 'uo', 'mr', 'wins', 'pn')
        if st ~= 0 then return {st, reason} end
        local f = {g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12]}
        local ack = tonumber(ARGV[7])
        local acked, hs = tonumber(f[1]), tonumber(f[2])
        if ack > hs then return {-4, 0} end
        if ack > acked then
          local freed = 0
          for _, e in ipairs(redis.call('LRANGE', qk, 0, ack - acked - 1)) do
            if string.sub(e, 1, 1) ~= 'g' then freed = freed + #e - 1 + 64 end
          end
          redis.call('LTRIM', qk, ack - acked, -1)
          redis.call('HINCRBY', sk, 'pb', -freed)
          acked = ack
        end
        local pn = tonumber(f[10]) + 1
        local pu = tonumber(f[3])
        local first = 0
        if f[4] ~= '0' then first = 1 end
        -- What arrived between the last poll's end and now, with no poll outstanding, counts against
        -- MaxPendingMessagesPerSession: the direct sends are counted already (uo); a log entry is counted in the stretch
        -- its publish time falls in whenever a take reaches it, so a response's frame limit never lets one slip by.
        local wins = f[9] .. math.min(pu, now) .. ',' .. ARGV[4] .. ',' .. f[7] .. ';'
        local _, stretches = string.gsub(wins, ';', '')
        if stretches > 16 then wins = string.sub(wins, string.find(wins, ';', 1, true) + 1) end
        redis.call('HSET', sk, 'acked', acked, 'wins', wins, 'uo', 0, 'pu', ARGV[8], 'fpd', 0, 'pn', pn)
        touch(0)
        if pu > now then redis.call('PUBLISH', wake, 's ' .. id) end
        local out = {0, pn, acked, tonumber(f[5]), tonumber(f[6]), first, tonumber(f[8]), hs, 0}
        local single = f[6] == '0'
        local n = queued(out, acked, 0, single and 1 or tonumber(ARGV[9]))
        out[9] = n
        if n > 0 then
          if acked + n > hs then redis.call('HSET', sk, 'hs', acked + n) end
          if single then redis.call('HSET', sk, 'pu', ARGV[4]) else redis.call('HSET', sk, 'pu', ARGV[10]) end
        end
        cursors(out)
        return out
        """;

    /// <summary>
    /// Takes frames for a poll: first what is queued after the response's cursor, then, once the response has all of
    /// it, new entries the node offers from its sources' logs, accepted only where they follow the session's cursor.
    /// ARGV 7-15 = poll number, the response's cursor, most frames, whether frames end the poll, MaxPendingMessages,
    /// MaxPendingBytes, overflow policy, when a multiple-message poll with frames ends at the latest, source count; then
    /// per source: name, epoch, first offered id, the log's first id; then the entry count; then per entry: source index,
    /// publish time (Unix ms), publisher session ('' for everyone), the entry ('j'/'b' + payload).
    /// Returns {status, reason}; {-7, dropped, user, encoding, mode, sources...} when an overflow ended the session; or
    /// {1, highest sent before, frame count, frames (sequence, kind, body: for 'o' the offered entry's index)...,
    /// cursor count, (source, cursor)... (with frames, only those that moved; else all), dropped}.
    /// </summary>
    public const string Take = Prelude + """
        local st, reason, g = lookup('pn', 'acked', 'hs', 'next', 'pb', 'wins', 'enc')
        if st ~= 0 then return {st, reason} end
        local f = {g[3], g[4], g[5], g[6], g[7], g[8], g[9]}
        if f[1] ~= ARGV[7] then return {-5, 0} end
        local acked, hs, nxt, pb, text = tonumber(f[2]), tonumber(f[3]), tonumber(f[4]), tonumber(f[5]), f[7] == '0'
        local ws, we, wn = {}, {}, {}
        for a, b, n in string.gmatch(f[6], '(%d+),(%d+),(%d+);') do
          ws[#ws + 1] = tonumber(a)
          we[#we + 1] = tonumber(b)
          wn[#wn + 1] = tonumber(n)
        end
        local counted = false
        local limit, maxMessages, maxBytes, fault = tonumber(ARGV[9]), tonumber(ARGV[11]), tonumber(ARGV[12]), ARGV[13] == 'fault'
        local moved, set = {}, {}
        local out = {1, hs, 0}
        local start = math.max(0, tonumber(ARGV[8]) - acked)
        local taken = queued(out, acked, start, limit)
        local dropped = 0
        if acked + start + taken == nxt - 1 and taken < limit then
          local ns = tonumber(ARGV[15])
          local cur, ep, usable, missed = {}, {}, {}, {}
          for i = 1, ns do
            local b = 16 + (i - 1) * 4
            local c = redis.call('HGET', ck, ARGV[b])
            if c then
              local colon = string.find(c, ':', 1, true)
              local cep, cn = string.sub(c, 1, colon - 1), tonumber(string.sub(c, colon + 1))
              local oep, ofirst, ostart = ARGV[b + 1], tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])
              if cep ~= oep then
                -- The log was made anew (it expired, or its shard lost it): the cursor starts over in the new one.
                if tonumber(cep) < tonumber(oep) then cep = oep; cn = 0 else cn = nil end
              end
              if cn then
                cur[i] = cn
                ep[i] = cep
                if ofirst == cn + 1 then
                  usable[i] = true
                elseif ostart > cn + 1 and ofirst == ostart then
                  -- The log no longer holds what the session missed: the overflow policy applies to all of it.
                  usable[i] = true
                  missed[i] = ostart - cn - 1
                  cur[i] = ostart - 1
                end
              end
            end
          end
          -- Consecutive drops share one gap frame: in this response while it has room, else queued for the next.
          local gapAt, gapQueued = nil, false
          local function drop(n)
            dropped = dropped + n
            if gapAt then
              out[gapAt] = out[gapAt] + n
              redis.call('LSET', qk, -1, 'g' .. out[gapAt])
            elseif gapQueued then
              redis.call('LSET', qk, -1, 'g' .. (tonumber(string.sub(redis.call('LINDEX', qk, -1), 2)) + n))
            else
              redis.call('RPUSH', qk, 'g' .. n)
              if taken < limit then
                out[#out + 1] = nxt
                out[#out + 1] = 'g'
                out[#out + 1] = n
                gapAt = #out
                taken = taken + 1
              else
                gapQueued = true
              end
              nxt = nxt + 1
            end
          end
          local overflow = false
          local eb = 16 + ns * 4
          for j = 1, tonumber(ARGV[eb]) do
            local b = eb + 1 + (j - 1) * 4
            local i = tonumber(ARGV[b])
            if usable[i] and missed[i] then
              if fault then overflow = true; break end
              drop(missed[i])
              missed[i] = nil
            end
            if usable[i] then
              local entry = ARGV[b + 3]
              local ts = tonumber(ARGV[b + 1])
              local fate, w = 'take', nil
              if ARGV[b + 2] == id then
                fate = 'skip'
              elseif text and string.sub(entry, 1, 1) == 'b' then
                fate = 'drop'
              else
                for k = #ws, 1, -1 do
                  if ts >= ws[k] and ts <= we[k] then w = k; break end
                end
                if w and wn[w] >= maxMessages then
                  if fault then overflow = true; break end
                  fate = 'drop'
                end
              end
              local size = #entry - 1 + 64
              if fate == 'take' and (taken >= limit or pb + size > maxBytes) then
                -- The response is full, or the session holds all it may until the client acknowledges: a later take.
                usable[i] = false
              else
                cur[i] = cur[i] + 1
                if fate == 'drop' then
                  drop(1)
                elseif fate == 'take' then
                  if w then wn[w] = wn[w] + 1; counted = true end
                  redis.call('RPUSH', qk, entry)
                  out[#out + 1] = nxt
                  out[#out + 1] = 'o'
                  out[#out + 1] = j
                  nxt = nxt + 1
                  pb = pb + size
                  taken = taken + 1
                  gapAt = nil
                end
              end
            end
          end
          if overflow then
            local ended = {-7, dropped + 1}
            finish(3, ended)
            return ended
          end
          for i = 1, ns do
            if cur[i] then
              moved[#moved + 1] = ARGV[16 + (i - 1) * 4]
              moved[#moved + 1] = ep[i] .. ':' .. cur[i]
            end
          end
          if #moved > 0 then redis.call('HSET', ck, unpack(moved)) end
          set[#set + 1] = 'next'
          set[#set + 1] = nxt
          set[#set + 1] = 'pb'
          set[#set + 1] = pb
          if counted then
            local wins = ''
            for k = 1, #ws do wins = wins .. ws[k] .. ',' .. we[k] .. ',' .. wn[k] .. ';' end
            set[#set + 1] = 'wins'
            set[#set + 1] = wins
          end
          -- A queue emptied by an acknowledgement was deleted; one made again here expires like the session.
          if nxt > tonumber(f[4]) then redis.call('PEXPIRE', qk, inact) end
        end
        local n = (#out - 3) / 3
        out[3] = n
        if n > 0 then
          local last = out[#out - 2]
          if last > hs then
            set[#set + 1] = 'hs'
            set[#set + 1] = last
          end
          -- The poll ends with these frames, or within the batch window after them: from then, what arrives counts.
          -- (Its start counted as activity; frames do not renew it again.)
          set[#set + 1] = 'pu'
          set[#set + 1] = ARGV[10] == '1' and ARGV[4] or ARGV[14]
        end
        if #set > 0 then redis.call('HSET', sk, unpack(set)) end
        if n > 0 then
          -- The node knows the other cursors: it needs only those that moved. A source added meanwhile (a subscribe)
          -- reaches it with the next poll, which follows these frames within the batch window.
          out[#out + 1] = #moved / 2
          for _, v in ipairs(moved) do out[#out + 1] = v end
        else
          cursors(out)
        end
        out[#out + 1] = dropped
        return out
        """;

    /// <summary>Ends a poll that took nothing: ARGV 7 = its poll number. It stops counting as outstanding unless a newer one replaced it.</summary>
    public const string EndPoll = Prelude + """
        if redis.call('HGET', sk, 'pn') == ARGV[7] then
          redis.call('HSET', sk, 'pu', ARGV[4])
          -- The poll of a page that went away ends when that page unloads: that is not the page coming back.
          if redis.call('HEXISTS', sk, 'aw') == 0 then touch() end
        end
        return {0}
        """;

    /// <summary>Ends a session its client closed: ARGV 7 = the reason. Returns {status, reason} or {0, user, encoding, mode, sources...}.</summary>
    public const string Close = Prelude + """
        local st, reason = lookup()
        if st ~= 0 then return {st, reason} end
        local out = {0}
        finish(ARGV[7], out)
        return out
        """;

    /// <summary>
    /// Ends a session from the server side, without its token: ARGV 7-8 = the reason, and whether only a session that
    /// never polled may end (an eviction). Returns {-1} when there is none, {1} when it has polled and may not, or
    /// {0, user, encoding, mode, sources...}.
    /// </summary>
    public const string End = Prelude + """
        local fpd = redis.call('HGET', sk, 'fpd')
        if not fpd then return {-1} end
        if ARGV[8] == '1' and fpd == '0' then return {1} end
        local out = {0}
        finish(ARGV[7], out)
        return out
        """;

    /// <summary>
    /// Claims the overflow check of a session that makes no request, for the sweep, without counting as activity:
    /// ARGV 7-8 = the latest renewal that still needs it, the latest earlier check that does. One node claims it per
    /// renewal interval (the claim is the 'chk' field). Returns {-1} when there is no session, {1} when it needs no
    /// check (renewed or checked since), or {0, when its last poll ended or ends, encoding, cursor count, (source, cursor)...}.
    /// </summary>
    public const string Check = Prelude + """
        local f = redis.call('HMGET', sk, 'mr', 'chk', 'pu', 'enc')
        if not f[1] then return {-1} end
        if tonumber(f[1]) > tonumber(ARGV[7]) or tonumber(f[2] or '0') > tonumber(ARGV[8]) then return {1} end
        redis.call('HSET', sk, 'chk', ARGV[4])
        local out = {0, tonumber(f[3]), tonumber(f[4])}
        cursors(out)
        return out
        """;

    /// <summary>Records that the session's memberships were renewed: ARGV 7 = when.</summary>
    public const string Renewed = Prelude + """
        if redis.call('EXISTS', sk) == 1 then redis.call('HSET', sk, 'mr', ARGV[7]) end
        return {0}
        """;
}
