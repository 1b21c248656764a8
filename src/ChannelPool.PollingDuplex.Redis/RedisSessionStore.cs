using System.Globalization;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// One endpoint's sessions and topics in Redis: each method is one script, one round trip, all or nothing.
/// The keys of an endpoint share the hash tag <c>{prefix:pattern}</c>.
/// </summary>
internal sealed class RedisSessionStore
{
    private readonly IDatabase _db;
    private readonly string _prefix;
    private readonly PollingDuplexOptions _options;
    private readonly TimeProvider _time;

    public RedisSessionStore(RedisDuplexConnection connection, string pattern, PollingDuplexOptions options, TimeProvider time)
    {
        Connection = connection;
        _db = connection.Database;
        _prefix = "{" + connection.Options.KeyPrefix + ":" + pattern + "}";
        _options = options;
        _time = time;
        WakeChannel = RedisChannel.Literal(_prefix + ":wake");
        connection.Listen(WakeChannel);
    }

    public RedisDuplexConnection Connection { get; }

    public RedisChannel WakeChannel { get; }

    public PollingDuplexOptions Options => _options;

    public TimeProvider TimeProvider => _time;

    /// <summary>Opens a session; returns null, or the limit that refused it.</summary>
    public async Task<string?> OpenAsync(string id, string tokenHash, DuplexEncoding encoding, PollingDuplexMode mode)
    {
        while (true)
        {
            var result = (long)await RunAsync(
                RedisSessionScripts.Open,
                id,
                tokenHash,
                (int)encoding,
                (int)mode,
                _options.MaxConcurrentSessions,
                _options.MaxPendingSessions);
            switch (result)
            {
                case 0:
                    return null;
                case 1:
                    return DuplexWire.Codes.TooManySessions;
                case 2:
                    return DuplexWire.Codes.TooManyPendingSessions;
                default:
                    // A 128-bit random id is taken: it cannot happen, but the in-memory store retries too.
                    id = PollingDuplexServer.Base64Url(System.Security.Cryptography.RandomNumberGenerator.GetBytes(16));
                    continue;
            }
        }
    }

    public async Task<(Lookup Lookup, DuplexEncoding Encoding, PollingDuplexMode Mode, long Received)> FindAsync(string id, string tokenHash)
    {
        var r = (RedisResult[])(await RunAsync(RedisSessionScripts.Find, id, tokenHash))!;
        var lookup = Read(r);
        return lookup.Status == 0 ? (lookup, (DuplexEncoding)(int)r[1], (PollingDuplexMode)(int)r[2], (long)r[3]) : (lookup, default, default, 0);
    }

    /// <summary>Receives one client message, with the command it carries (op empty when the message was rejected).</summary>
    public async Task<(Lookup Lookup, long Received, long Queued)> ReceiveAsync(string id, string tokenHash, long sequence, string op, string topic, byte[] notification, bool echo, bool tooLarge)
    {
        var r = (RedisResult[])(await RunAsync(
            RedisSessionScripts.Receive,
            id,
            tokenHash,
            sequence,
            op,
            topic,
            notification,
            echo ? "1" : "0",
            _options.MaxPendingMessagesPerSession,
            _options.MaxPendingBytesPerSession,
            _options.OverflowPolicy == DuplexOverflowPolicy.FaultSession ? "fault" : "drop",
            (long)(_options.InactivityTimeout.TotalMilliseconds * 2),
            tooLarge ? "1" : "0"))!;
        var lookup = Read(r);
        return lookup.Status switch
        {
            0 => (lookup, (long)r[1], (long)r[2]),
            1 or 2 => (lookup, (long)r[1], 0),
            _ => (lookup, 0, 0),
        };
    }

    public async Task<(Lookup Lookup, long PollNumber, long Acked, DuplexEncoding Encoding, PollingDuplexMode Mode, bool FirstPoll)> BeginPollAsync(string id, string tokenHash, long ack)
    {
        // Counted as outstanding a little beyond the poll timeout, so a poll on a node that died stops counting soon.
        var until = Now() + (long)_options.ServerPollTimeout.TotalMilliseconds + 5000;
        var r = (RedisResult[])(await RunAsync(RedisSessionScripts.BeginPoll, id, tokenHash, ack, until))!;
        var lookup = Read(r);
        return lookup.Status == 0
            ? (lookup, (long)r[1], (long)r[2], (DuplexEncoding)(int)r[3], (PollingDuplexMode)(int)r[4], (long)r[5] == 1)
            : (lookup, 0, 0, default, default, false);
    }

    /// <summary>
    /// Takes up to <paramref name="limit"/> frames after <paramref name="cursor"/> into <paramref name="frames"/>; with
    /// <paramref name="endWithFrames"/>, frames found also end the poll, as <see cref="EndPollAsync"/> would.
    /// </summary>
    public async Task<Lookup> TakeAsync(string id, string tokenHash, long pollNumber, long cursor, int limit, List<OutboundFrame> frames, bool endWithFrames = false)
    {
        var r = (RedisResult[])(await RunAsync(RedisSessionScripts.Take, id, tokenHash, pollNumber, cursor, limit, endWithFrames ? "1" : "0"))!;
        var status = (long)r[0];
        if (status < 0)
        {
            return Read(r);
        }

        for (var i = 1; i + 2 < r.Length; i += 3)
        {
            var sequence = (long)r[i];
            if ((string?)r[i + 1] == "m")
            {
                frames.Add(new OutboundFrame(sequence, PubSub.PubSubHandler.NotificationMessage((byte[])r[i + 2]!)));
            }
            else
            {
                frames.Add(new OutboundFrame(sequence, null) { Missed = long.Parse((string)r[i + 2]!, CultureInfo.InvariantCulture) });
            }
        }

        return new Lookup(0, 0);
    }

    public Task EndPollAsync(string id, string tokenHash, long pollNumber) => RunAsync(RedisSessionScripts.EndPoll, id, tokenHash, pollNumber);

    public async Task<Lookup> EndAsync(string id, string tokenHash, DuplexSessionEndReason reason) =>
        Read((RedisResult[])(await RunAsync(RedisSessionScripts.End, id, tokenHash, (int)reason))!);

    private static Lookup Read(RedisResult[] r)
    {
        var status = (long)r[0];
        return new Lookup(status, status == -3 ? (long)r[1] : 0);
    }

    private long Now() => _time.GetUtcNow().ToUnixTimeMilliseconds();

    private Task<RedisResult> RunAsync(string script, string id, string tokenHash, params RedisValue[] extra)
    {
        RedisValue[] args =
        [
            _prefix,
            id,
            tokenHash,
            Now(),
            (long)_options.InactivityTimeout.TotalMilliseconds,
            (long)_options.EffectiveFirstPollTimeout.TotalMilliseconds,
            .. extra,
        ];
        return _db.ScriptEvaluateAsync(script, [(RedisKey)(_prefix + ":s:" + id)], args);
    }
}

/// <summary>What a script found: 0 found, -1 unknown, -2 wrong token, -3 ended (<see cref="Reason"/> says why), -4 bad ack, -5 superseded; 1 out of order.</summary>
internal readonly record struct Lookup(long Status, long Reason)
{
    public SessionLookup AsSessionLookup => Status switch
    {
        0 => SessionLookup.Found,
        -2 => SessionLookup.InvalidToken,
        -3 => SessionLookup.Ended,
        _ => SessionLookup.Unknown,
    };
}
