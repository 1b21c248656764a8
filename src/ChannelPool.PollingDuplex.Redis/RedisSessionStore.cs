using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using System.Security.Cryptography;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.Extensions.Logging;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// One endpoint's sessions in Redis, so any node answers any request. Each step is a script on the keys of one session,
/// one source or the endpoint (one Redis Cluster slot each): all or nothing, and a step that finds Redis away fails
/// with <see cref="DuplexStoreUnavailableException"/>, which clients retry. A publish is written once, to its topic's log;
/// a poll takes from its session's sources' logs, as this node's feeds have read them, from the session's cursors.
/// </summary>
/// <remarks>
/// Split by concern: sessions and polls here; what a client's message does in <c>.Receive.cs</c>; server-side sends in
/// <c>.Push.cs</c>; sweeping, renewal, ends and the nodes' agreement on options in <c>.Lifecycle.cs</c>.
/// </remarks>
internal sealed partial class RedisSessionStore : DuplexSessionStore
{
    /// <summary>How long a feed read is trusted without a wake: wakes are fire-and-forget, so a poll that starts later looks again.</summary>
    internal static readonly TimeSpan FeedFreshFor = TimeSpan.FromSeconds(2);

    private readonly IDatabase _db;
    private readonly AsyncPollingDuplexHandler? _handler;
    private readonly ILogger _logger;
    private readonly ConcurrentDictionary<string, RedisPoll> _polls = new(StringComparer.Ordinal);

    // Polls whose start script is under way: a wake for the session (a subscribe, say) that comes before the poll is in
    // _polls is kept here, or the poll would wait out its timeout without the session's new source.
    private readonly ConcurrentDictionary<string, StrongBox<int>> _starting = new(StringComparer.Ordinal);
    private readonly RedisValue _wake;
    private readonly RedisKey[] _endpointKeys;

    public RedisSessionStore(RedisDuplexConnection connection, string pattern, PollingDuplexOptions options, TimeProvider time, AsyncPollingDuplexHandler? handler, ILogger logger)
        : base(pattern, options, time)
    {
        Connection = connection;
        _db = connection.Database;
        _handler = handler;
        _logger = logger;
        Keys = new RedisKeys(connection.Options.KeyPrefix, pattern);
        Feeds = new RedisFeeds(this);
        _wake = Keys.Endpoint + ":wake";
        _endpointKeys = [Keys.Live, Keys.Pending, Keys.Info, Keys.Owners, Keys.SessionOwners];
        InactivityMs = (long)options.InactivityTimeout.TotalMilliseconds;
        RenewEveryMs = Math.Max(1, Math.Min(InactivityMs / 4, 15_000));
        if (handler is not null)
        {
            AttachHandler(handler);
        }

        NodeId = Convert.ToHexString(RandomNumberGenerator.GetBytes(8));
        Subscribed = connection.AttachAsync(this);
        Subscribed.ContinueWith(static t => _ = t.Exception, CancellationToken.None, TaskContinuationOptions.OnlyOnFaulted, TaskScheduler.Default);
        StartTimers();
    }

    public RedisDuplexConnection Connection { get; }

    public RedisKeys Keys { get; }

    public RedisFeeds Feeds { get; }

    /// <summary>Gets the wake channel's subscription, which the host's start waits for.</summary>
    public Task Subscribed { get; }

    /// <summary>Gets this node's name among the endpoint's nodes.</summary>
    public string NodeId { get; }

    private long InactivityMs { get; }

    /// <summary>How often a live session renews its place in the endpoint's, its topics' and its user's sets: those expire this much after the session at the latest.</summary>
    private long RenewEveryMs { get; }

    /// <inheritdoc />
    protected override async ValueTask<DuplexOpenResult> OpenAsync(DuplexEncoding encoding, PollingDuplexMode mode, string? userId, string? remoteAddress, CancellationToken cancellationToken)
    {
        ThrowIfRefused();
        var (owner, ownerLimit) = OwnerOf(userId, remoteAddress);
        var token = CreateToken();
        var tokenHash = Hash(token);
        while (true)
        {
            var id = CreateSessionId();
            var clock = TimeProvider.GetUtcNow();
            var now = clock.ToUnixTimeMilliseconds();
            var deadline = now + (long)FirstPollTimeout.TotalMilliseconds;
            var ordered = deadline + ((clock.Ticks % TimeSpan.TicksPerMillisecond) / (double)TimeSpan.TicksPerMillisecond);
            var reserved = await EvalAsync(
                RedisEndpointScripts.Reserve,
                _endpointKeys,
                [now, Options.MaxConcurrentSessions, Options.MaxPendingSessions, id, deadline, Info(encoding, mode, userId), ordered, owner, ownerLimit]);
            if ((long)reserved[0] != 0)
            {
                return (long)reserved[0] == 2 ? DuplexOpenResult.TooManyUserSessions : DuplexOpenResult.TooManySessions;
            }

            if ((string?)reserved[2] is { Length: > 0 } displaced)
            {
                await DisplaceAsync(displaced);
            }

            // A session reads its user's log implicitly, from where it ends now.
            RedisValue userSource = RedisValue.EmptyString, userCursor = RedisValue.EmptyString;
            if (userId is not null)
            {
                userSource = RedisKeys.UserSource(userId);
                userCursor = await JoinAsync(userSource!, id, deadline);
            }

            var created = await EvalSessionAsync(RedisSessionScripts.Create, id, tokenHash, userId, (int)encoding, (int)mode, deadline, userSource, userCursor);
            if ((long)created[0] != 0)
            {
                // A 128-bit random id is taken: it cannot happen, but the in-memory store retries too.
                continue;
            }

            RecordSessionOpened();
            if ((string?)reserved[1] is { Length: > 0 } victim)
            {
                await EvictAsync(victim);
            }

            if (_handler is not null)
            {
                try
                {
                    await _handler.OnSessionOpenedAsync(CreateSessionHandle(id, userId, encoding, mode), cancellationToken);
                }
                catch (Exception ex) when (ex is not OperationCanceledException)
                {
                    await EndByServerAsync(id, DuplexSessionEndReason.ClosedByServer, onlyIfPending: false);
                    return DuplexOpenResult.Failed(id, ex);
                }
            }

            return DuplexOpenResult.Opened(id, token);
        }
    }

    /// <inheritdoc />
    protected override async ValueTask<DuplexSessionLookup> FindAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken)
    {
        ThrowIfRefused();
        if (!IsSessionId(sessionId))
        {
            return DuplexSessionLookup.Unknown;
        }

        var tokenHash = Hash(token);
        var r = await EvalSessionAsync(RedisSessionScripts.Find, sessionId, tokenHash, userId);
        var lookup = Read(r);
        if (lookup.Status != DuplexLookupStatus.Found)
        {
            return lookup;
        }

        // A send does not end a poll: the messages published since the last one ended count, unless one is outstanding.
        var pollEnds = (long)r[5];
        RenewIfDue(sessionId, (long)r[4], cursors: null, since: pollEnds > Now() ? null : pollEnds, text: (int)r[1] == (int)DuplexEncoding.Text);
        return DuplexSessionLookup.Found(new RedisSession(sessionId, tokenHash, userId, (DuplexEncoding)(int)r[1], (PollingDuplexMode)(int)r[2], (long)r[3]));
    }

    /// <inheritdoc />
    protected override async ValueTask<DuplexPollStart> BeginPollAsync(string sessionId, string token, string? userId, long ack, CancellationToken cancellationToken)
    {
        ThrowIfRefused();
        if (!IsSessionId(sessionId))
        {
            return DuplexPollStart.LookupFailed(DuplexSessionLookup.Unknown);
        }

        var tokenHash = Hash(token);
        var now = Now();
        var keys = Keys.Session(sessionId);

        // Counted as outstanding a little beyond the poll timeout, so a poll on a node that died stops counting soon.
        var until = now + (long)Options.ServerPollTimeout.TotalMilliseconds + 5000;
        var woken = new StrongBox<int>();
        _starting[sessionId] = woken;
        try
        {
            var r = await EvalSessionAsync(RedisSessionScripts.BeginPoll, keys, sessionId, tokenHash, userId, [ack, until, Options.MaxPendingMessagesPerSession, BatchUntil(now)]);
            var status = (long)r[0];
            return status == 0
                ? DuplexPollStart.Started(await StartPollAsync(r, keys, sessionId, tokenHash, userId, now, woken))
                : status == -4 ? DuplexPollStart.BeyondSent : DuplexPollStart.LookupFailed(Read(r));
        }
        finally
        {
            _starting.TryRemove(KeyValuePair.Create(sessionId, woken));
        }
    }

    /// <inheritdoc />
    protected override async ValueTask<DuplexSessionLookup> CloseAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken)
    {
        ThrowIfRefused();
        if (!IsSessionId(sessionId))
        {
            return DuplexSessionLookup.Unknown;
        }

        var r = await EvalSessionAsync(RedisSessionScripts.Close, sessionId, Hash(token), userId, (int)DuplexSessionEndReason.ClosedByClient);
        var lookup = Read(r);
        if (lookup.Status == DuplexLookupStatus.Found)
        {
            Ended(sessionId, DuplexSessionEndReason.ClosedByClient, r, 1);
        }

        return lookup;
    }

    /// <summary>Makes the poll a begin-poll script started this node's poll of its session, and wakes it for what came meanwhile.</summary>
    private async Task<RedisPoll> StartPollAsync(RedisResult[] r, SessionKeys keys, string sessionId, string tokenHash, string? userId, long now, StrongBox<int> woken)
    {
        var encoding = (DuplexEncoding)(int)r[3];
        var mode = (PollingDuplexMode)(int)r[4];
        var ready = new List<DuplexFrame>();
        var at = ReadFrames(r, 7, ready, offers: null);
        var cursors = ReadCursors(r, ref at);
        if ((long)r[5] == 1)
        {
            // The first poll ends the pending state: only a poll does.
            await EvalAsync(RedisEndpointScripts.FirstPoll, _endpointKeys, [sessionId, LiveUntil(now)]);
        }

        // This poll takes what is behind, counting the messages as it goes: the renewal counts the bytes only.
        RenewIfDue(sessionId, (long)r[6], cursors, since: null, text: encoding == DuplexEncoding.Text);
        var poll = new RedisPoll(this, keys, sessionId, tokenHash, userId ?? string.Empty, (long)r[1], (long)r[2], encoding, mode, ready, cursors);
        _polls.AddOrUpdate(sessionId, poll, (_, other) =>
        {
            // Two polls of one session on this node: the older is superseded, and its next look says so, whichever of
            // the two got here first.
            var (older, newer) = other.Number < poll.Number ? (other, poll) : (poll, other);
            older.WakeSession();
            return newer;
        });

        // Read after the poll is in _polls, as OnWake looks there after it marks a start: either sees the other's wake.
        if (Volatile.Read(ref woken.Value) == 1)
        {
            poll.WakeSession();
        }

        return poll;
    }

    /// <summary>Takes frames for <paramref name="poll"/>: what is queued after <paramref name="cursor"/>, then what the offers bring.</summary>
    internal async Task<DuplexTakeResult> TakeAsync(RedisPoll poll, long cursor, List<RedisOffer> offers, int limit, List<DuplexFrame> frames)
    {
        var now = Now();
        var args = new List<RedisValue>(16 + (offers.Count * 4))
        {
            poll.Number,
            cursor,
            limit,
            poll.Mode == PollingDuplexMode.SingleMessagePerPoll ? "1" : "0",
            Options.MaxPendingMessagesPerSession,
            Options.MaxPendingBytesPerSession,
            PolicyName,
            BatchUntil(now),
            offers.Count,
        };
        var entries = new List<(int Source, RedisLogEntry Entry)>();
        for (var i = 0; i < offers.Count; i++)
        {
            var offer = offers[i];
            args.Add(offer.Source);
            args.Add(offer.Epoch);
            args.Add(offer.FirstId);
            args.Add(offer.LogStart);
            foreach (var entry in offer.Entries)
            {
                entries.Add((i + 1, entry));
            }
        }

        // Across sources, in publish order as far as this node can see it; within a source, always in log order.
        entries.Sort(static (a, b) => a.Entry.Published != b.Entry.Published ? a.Entry.Published.CompareTo(b.Entry.Published) : a.Source != b.Source ? a.Source.CompareTo(b.Source) : a.Entry.Id.CompareTo(b.Entry.Id));
        var more = offers.Any(o => o.More);
        if (entries.Count > OfferCap(limit))
        {
            entries.RemoveRange(OfferCap(limit), entries.Count - OfferCap(limit));
            more = true;
        }

        args.Add(entries.Count);
        foreach (var (source, entry) in entries)
        {
            args.Add(source);
            args.Add(entry.Published);
            args.Add(entry.Publisher);
            args.Add(entry.Stored);
        }

        var r = await EvalSessionAsync(RedisSessionScripts.Take, poll.Keys, poll.SessionId, poll.TokenHash, poll.UserId, [.. args]);
        switch ((long)r[0])
        {
            case -5:
                return DuplexTakeResult.Superseded;
            case -7:
                RecordMessagesDropped((long)r[1]);
                Ended(poll.SessionId, DuplexSessionEndReason.Overflow, r, 2);
                return DuplexTakeResult.LookupFailed(DuplexSessionLookup.Ended(DuplexSessionEndReason.Overflow));
            case < 0:
                return DuplexTakeResult.LookupFailed(Read(r));
        }

        var before = frames.Count;
        var at = ReadFrames(r, 1, frames, entries);

        // With frames, the script returns only the cursors that moved; without, all of them (a subscribe or an
        // unsubscribe shows there).
        poll.SetCursors(ReadCursors(r, ref at), replace: frames.Count == before);
        RecordMessagesDropped((long)r[at]);
        if (more)
        {
            // The logs hold more than this take could carry: the response's next take looks at once, not at the next wake.
            poll.Wake();
        }

        return DuplexTakeResult.Frames;
    }

    /// <summary>
    /// How many entries a take is offered for <paramref name="limit"/> frames: beyond the frames, as many again, so
    /// entries dropped by the overflow policy join one gap rather than one per response.
    /// </summary>
    internal int OfferCap(int limit) => limit + Options.MaxPendingMessagesPerSession;

    internal Task EndPollAsync(RedisPoll poll) => EvalSessionAsync(RedisSessionScripts.EndPoll, poll.Keys, poll.SessionId, poll.TokenHash, poll.UserId, [poll.Number]);

    /// <summary>Stops waking a poll that ended.</summary>
    internal void Forget(RedisPoll poll) => _polls.TryRemove(KeyValuePair.Create(poll.SessionId, poll));

    /// <summary>Reads a source's log from an id: {epoch, last id, first id held, first id returned, entries...}.</summary>
    internal Task<RedisResult[]> ReadLogAsync(SourceKeys keys, long from, int max) =>
        EvalAsync(RedisSourceScripts.Read, keys.All, [Now(), SourceTtlMs, from, max]);

    /// <summary>A message on the endpoint's wake channel: a session's change (<c>s id</c>), or a source's new entry (<c>source epoch id</c>).</summary>
    internal void OnWake(RedisValue message)
    {
        var text = (string?)message ?? string.Empty;
        if (text.StartsWith("s ", StringComparison.Ordinal))
        {
            var session = text[2..];
            if (_starting.TryGetValue(session, out var woken))
            {
                Volatile.Write(ref woken.Value, 1);
            }

            if (_polls.TryGetValue(session, out var poll))
            {
                poll.WakeSession();
            }

            return;
        }

        // '<source> <epoch> <id> <the log's first id>'.
        var first = text.IndexOf(' ', StringComparison.Ordinal);
        var second = first < 0 ? -1 : text.IndexOf(' ', first + 1);
        var third = second < 0 ? -1 : text.IndexOf(' ', second + 1);
        if (third > 0
            && long.TryParse(text.AsSpan(second + 1, third - second - 1), System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out var id)
            && long.TryParse(text.AsSpan(third + 1), System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out var logStart))
        {
            Feeds.Announce(text[..first], text[(first + 1)..second], id, logStart);
        }
    }

    /// <summary>Reads a script's lookup: 0 found, -1 unknown, -2 wrong token, -3 ended (the reason follows), -6 wrong user.</summary>
    internal static DuplexSessionLookup Read(RedisResult[] r) => (long)r[0] switch
    {
        0 => DuplexSessionLookup.Found(),
        -2 => DuplexSessionLookup.InvalidToken,
        -3 => DuplexSessionLookup.Ended((DuplexSessionEndReason)(long)r[1]),
        -6 => DuplexSessionLookup.WrongUser,
        _ => DuplexSessionLookup.Unknown,
    };

    /// <summary>Runs a script on one slot's keys, turning Redis's absence into <see cref="DuplexStoreUnavailableException"/>.</summary>
    internal async Task<RedisResult[]> EvalAsync(string script, RedisKey[] keys, RedisValue[] args)
    {
        // By its SHA-1, computed once per script: a lookup by the text would hash kilobytes on every call. A server that
        // does not have it yet (a new shard, a restart) answers NOSCRIPT, and the text loads it.
#pragma warning disable CA5350 // Redis names a script by its SHA-1; it is an identifier here, not a security measure.
        var hash = ScriptHashes.GetOrAdd(script, static text => SHA1.HashData(System.Text.Encoding.UTF8.GetBytes(text)));
#pragma warning restore CA5350
        try
        {
            try
            {
                return (RedisResult[])(await _db.ScriptEvaluateAsync(hash, keys, args).ConfigureAwait(false))!;
            }
            catch (RedisServerException ex) when (ex.Message.StartsWith("NOSCRIPT", StringComparison.Ordinal))
            {
                return (RedisResult[])(await _db.ScriptEvaluateAsync(script, keys, args).ConfigureAwait(false))!;
            }
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            throw Unavailable(ex);
        }
    }

    /// <summary>The scripts' SHA-1s, by the script's own string: they are constants, so the reference is the key.</summary>
    private static readonly ConcurrentDictionary<string, byte[]> ScriptHashes = new(ReferenceEqualityComparer.Instance);

    private static DuplexStoreUnavailableException Unavailable(Exception ex) => new(
        $"The session store (Redis) did not answer: {ex.GetType().Name}. Each change is all or nothing, so nothing was half-done; try again.",
        ex);

    /// <summary>Runs a session script: KEYS are the session's, ARGV 1-6 the common head, then <paramref name="extra"/>.</summary>
    private Task<RedisResult[]> EvalSessionAsync(string script, string id, string tokenHash, string? userId, params RedisValue[] extra) =>
        EvalSessionAsync(script, Keys.Session(id), id, tokenHash, userId, extra);

    private Task<RedisResult[]> EvalSessionAsync(string script, SessionKeys keys, string id, string tokenHash, string? userId, RedisValue[] extra)
    {
        RedisValue[] args = [id, tokenHash, userId ?? string.Empty, Now(), InactivityMs, _wake, .. extra];
        return EvalAsync(script, keys.All, args);
    }

    /// <summary>
    /// Reads a frame count at <paramref name="at"/> and the frames after it (sequence, kind, body) into
    /// <paramref name="frames"/>, counting first deliveries and redeliveries against the highest sent before, which
    /// precedes the count. Returns the index after the frames.
    /// </summary>
    private int ReadFrames(RedisResult[] r, int at, List<DuplexFrame> frames, List<(int Source, RedisLogEntry Entry)>? offers)
    {
        var highestSent = (long)r[at];
        var count = (int)r[at + 1];
        var i = at + 2;
        long delivered = 0;
        for (var n = 0; n < count; n++, i += 3)
        {
            var sequence = (long)r[i];
            delivered += sequence > highestSent ? 1 : 0;
            frames.Add(((string?)r[i + 1]) switch
            {
                "o" => DuplexFrame.ForMessage(sequence, offers![(int)r[i + 2] - 1].Entry.Message),
                "g" => DuplexFrame.ForGap(sequence, (long)r[i + 2]),
                var kind => DuplexFrame.ForMessage(sequence, RedisLogEntry.ToMessage((byte)kind![0], (byte[])r[i + 2]!)),
            });
        }

        RecordFramesSent(delivered, count - delivered);
        return i;
    }

    private static Dictionary<string, string> ReadCursors(RedisResult[] r, ref int at)
    {
        var count = (int)r[at];
        var cursors = new Dictionary<string, string>(count, StringComparer.Ordinal);
        for (var i = 0; i < count; i++)
        {
            cursors[(string)r[at + 1 + (2 * i)]!] = (string)r[at + 2 + (2 * i)]!;
        }

        at += 1 + (2 * count);
        return cursors;
    }

    /// <summary>Session ids are ours: 22 base64url characters. Anything else is unknown without asking Redis, and never becomes a key.</summary>
    private static bool IsSessionId(string id) => id.Length == 22 && !id.AsSpan().ContainsAnyExcept(SessionIdChars);

    private static readonly System.Buffers.SearchValues<char> SessionIdChars =
        System.Buffers.SearchValues.Create("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");

    /// <summary>The token hash the scripts compare: SHA-256, base64. The token itself is never stored.</summary>
    private static string Hash(string token) => Convert.ToBase64String(SHA256.HashData(System.Text.Encoding.UTF8.GetBytes(token)));

    private static string Info(DuplexEncoding encoding, PollingDuplexMode mode, string? userId) => $"{(int)encoding}|{(int)mode}|{userId}";

    private string PolicyName => Options.OverflowPolicy == DuplexOverflowPolicy.FaultSession ? "fault" : "gap";

    private long Now() => TimeProvider.GetUtcNow().ToUnixTimeMilliseconds();

    private long BatchUntil(long now) => now + (long)Options.BatchWindow.TotalMilliseconds + 1;

    /// <summary>When a live session's entry in the endpoint's, its topics' and its user's sets expires, unless renewed.</summary>
    private long LiveUntil(long now) => now + InactivityMs + RenewEveryMs;

    /// <summary>How long a source outlives its last publish or membership renewal.</summary>
    private long SourceTtlMs => (2 * InactivityMs) + RenewEveryMs;

    /// <summary>A session as a send request found it: its encoding, mode, user and last received sequence, and the token hash the scripts check.</summary>
    private sealed class RedisSession(string id, string tokenHash, string? userId, DuplexEncoding encoding, PollingDuplexMode mode, long received) : DuplexStoreSession(id, encoding)
    {
        public string TokenHash { get; } = tokenHash;

        public string? UserId { get; } = userId;

        public PollingDuplexMode Mode { get; } = mode;

        /// <inheritdoc />
        public override long Received => received;
    }
}
