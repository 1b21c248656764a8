using System.Globalization;
using System.Security.Cryptography;
using ChannelPool.PollingDuplex.PubSub;
using ChannelPool.PollingDuplex.Stores;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// One pub/sub endpoint's sessions and topics in Redis, so any node answers any request. Each operation is one script,
/// one round trip, all or nothing; a script that finds Redis away fails with <see cref="DuplexStoreUnavailableException"/>,
/// which clients retry. The keys of an endpoint share the hash tag <c>{prefix:pattern}</c>.
/// </summary>
internal sealed class RedisSessionStore : DuplexSessionStore
{
    private const string ServerPushNotYet = "Server-side publish, send-to-user and subscriber counts on the Redis store arrive with its per-topic layout (issue 24's Redis half).";
    private readonly IDatabase _db;
    private readonly string _prefix;

    public RedisSessionStore(RedisDuplexConnection connection, string pattern, PollingDuplexOptions options, TimeProvider time)
        : base(pattern, options, time)
    {
        Connection = connection;
        _db = connection.Database;
        _prefix = "{" + connection.Options.KeyPrefix + ":" + pattern + "}";
        connection.Listen(RedisChannel.Literal(_prefix + ":wake"));
    }

    public RedisDuplexConnection Connection { get; }

    /// <inheritdoc />
    protected override async ValueTask<DuplexOpenResult> OpenAsync(DuplexEncoding encoding, PollingDuplexMode mode, string? userId, CancellationToken cancellationToken)
    {
        // Fails closed until this store records users (issue 24's Redis half): no signed-in user gets an unbound session.
        if (userId is not null)
        {
            throw new NotSupportedException("The Redis store does not record a session's user yet, so it serves anonymous clients only.");
        }

        var token = CreateToken();
        var tokenHash = Hash(token);
        while (true)
        {
            var id = CreateSessionId();
            var result = (long)await RunAsync(RedisSessionScripts.Open, id, tokenHash, (int)encoding, (int)mode, Options.MaxConcurrentSessions, Options.MaxPendingSessions);
            switch (result)
            {
                case 0:
                    return DuplexOpenResult.Opened(id, token);
                case 1:
                    return DuplexOpenResult.TooManySessions;
                case 2:
                    return DuplexOpenResult.TooManyPendingSessions;
                default:
                    // A 128-bit random id is taken: it cannot happen, but the in-memory store retries too.
                    continue;
            }
        }
    }

    /// <inheritdoc />
    protected override async ValueTask<DuplexSessionLookup> FindAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken)
    {
        if (userId is not null)
        {
            return DuplexSessionLookup.WrongUser;
        }

        var tokenHash = Hash(token);
        var r = (RedisResult[])(await RunAsync(RedisSessionScripts.Find, sessionId, tokenHash))!;
        var lookup = Read(r);
        return lookup.Status == DuplexLookupStatus.Found
            ? DuplexSessionLookup.Found(new RedisSession(sessionId, tokenHash, (DuplexEncoding)(int)r[1], (long)r[3]))
            : lookup;
    }

    /// <summary>Receives one client message: the subscribe, unsubscribe or publish it carries, and the advance of <c>recv</c>, in one script.</summary>
    protected override async ValueTask<DuplexReceiveResult> ReceiveAsync(DuplexStoreSession session, long sequence, DuplexMessage message, CancellationToken cancellationToken)
    {
        var tokenHash = ((RedisSession)session).TokenHash;
        string? rejected = null;
        string? tooLarge = null;
        PubSubCommand command = default;
        var notification = RedisValue.EmptyString;
        try
        {
            command = PubSubCommand.Parse(message);
        }
        catch (DuplexMessageRejectedException ex)
        {
            rejected = ex.Message;
        }

        if (rejected is null && command.Operation == PubSubOperation.Publish)
        {
            try
            {
                notification = command.CreateNotification(Options.MaxMessageSize).Payload;
            }
            catch (DuplexMessageRejectedException ex)
            {
                // As on one node, refused only if the topic has a subscriber to refuse it for: the script decides.
                tooLarge = ex.Message;
            }
        }

        var r = (RedisResult[])(await RunAsync(
            RedisSessionScripts.Receive,
            session.Id,
            tokenHash,
            sequence,
            rejected is null ? OperationName(command.Operation) : string.Empty,
            command.Topic ?? string.Empty,
            notification,
            command.Echo ? "1" : "0",
            Options.MaxPendingMessagesPerSession,
            Options.MaxPendingBytesPerSession,
            Options.OverflowPolicy == DuplexOverflowPolicy.FaultSession ? "fault" : "drop",
            (long)(Options.InactivityTimeout.TotalMilliseconds * 2),
            tooLarge is not null ? "1" : "0"))!;
        var status = (long)r[0];
        if (status < 0)
        {
            return DuplexReceiveResult.LookupFailed(Read(r));
        }

        var received = (long)r[1];
        return status switch
        {
            0 when rejected is not null => DuplexReceiveResult.Rejected(received, rejected),
            0 => DuplexReceiveResult.Accepted(received),
            2 => DuplexReceiveResult.Rejected(received, tooLarge!),
            _ when received >= sequence => DuplexReceiveResult.AlreadyReceived(received),
            _ => DuplexReceiveResult.OutOfOrder(received),
        };
    }

    /// <inheritdoc />
    protected override async ValueTask<DuplexPollStart> BeginPollAsync(string sessionId, string token, string? userId, long ack, CancellationToken cancellationToken)
    {
        if (userId is not null)
        {
            return DuplexPollStart.LookupFailed(DuplexSessionLookup.WrongUser);
        }

        var tokenHash = Hash(token);

        // Counted as outstanding a little beyond the poll timeout, so a poll on a node that died stops counting soon.
        var until = Now() + (long)Options.ServerPollTimeout.TotalMilliseconds + 5000;
        var r = (RedisResult[])(await RunAsync(RedisSessionScripts.BeginPoll, sessionId, tokenHash, ack, until))!;
        return (long)r[0] switch
        {
            0 => DuplexPollStart.Started(new RedisPoll(this, sessionId, tokenHash, (long)r[1], (long)r[2], (DuplexEncoding)(int)r[3], (PollingDuplexMode)(int)r[4])),
            -4 => DuplexPollStart.BeyondSent,
            _ => DuplexPollStart.LookupFailed(Read(r)),
        };
    }

    /// <inheritdoc />
    protected override async ValueTask<DuplexSessionLookup> CloseAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken) =>
        userId is not null
            ? DuplexSessionLookup.WrongUser
            : Read((RedisResult[])(await RunAsync(RedisSessionScripts.End, sessionId, Hash(token), (int)DuplexSessionEndReason.ClosedByClient))!);

    /// <summary>Counts a refused command received without running it: the receive script with no operation.</summary>
    protected override async ValueTask<DuplexReceiveResult> RefuseAsync(DuplexStoreSession session, long sequence, string reason, CancellationToken cancellationToken)
    {
        var r = (RedisResult[])(await RunAsync(
            RedisSessionScripts.Receive,
            session.Id,
            ((RedisSession)session).TokenHash,
            sequence,
            string.Empty,
            string.Empty,
            RedisValue.EmptyString,
            "0",
            Options.MaxPendingMessagesPerSession,
            Options.MaxPendingBytesPerSession,
            Options.OverflowPolicy == DuplexOverflowPolicy.FaultSession ? "fault" : "drop",
            (long)(Options.InactivityTimeout.TotalMilliseconds * 2),
            "0"))!;
        var status = (long)r[0];
        if (status < 0)
        {
            return DuplexReceiveResult.LookupFailed(Read(r));
        }

        var received = (long)r[1];
        return status switch
        {
            0 => DuplexReceiveResult.Rejected(received, reason),
            _ when received >= sequence => DuplexReceiveResult.AlreadyReceived(received),
            _ => DuplexReceiveResult.OutOfOrder(received),
        };
    }

    /// <inheritdoc />
    protected override ValueTask PublishAsync(string topic, DuplexMessage notification, CancellationToken cancellationToken) =>
        throw new NotSupportedException(ServerPushNotYet);

    /// <inheritdoc />
    protected override ValueTask SendToUserAsync(string userId, DuplexMessage message, CancellationToken cancellationToken) =>
        throw new NotSupportedException(ServerPushNotYet);

    /// <inheritdoc />
    protected override ValueTask<long> CountSubscribersAsync(string topic, CancellationToken cancellationToken) =>
        throw new NotSupportedException(ServerPushNotYet);

    /// <summary>
    /// Takes up to <paramref name="limit"/> frames after <paramref name="cursor"/> into <paramref name="frames"/>; with
    /// <paramref name="endWithFrames"/>, frames found also end the poll, as <see cref="EndPollAsync"/> would.
    /// Returns the script's status: 0 (frames or none), -5 superseded, or a lookup failure.
    /// </summary>
    internal async Task<RedisResult[]> TakeAsync(string id, string tokenHash, long pollNumber, long cursor, int limit, List<DuplexFrame> frames, bool endWithFrames)
    {
        var r = (RedisResult[])(await RunAsync(RedisSessionScripts.Take, id, tokenHash, pollNumber, cursor, limit, endWithFrames ? "1" : "0"))!;
        if ((long)r[0] > 0)
        {
            for (var i = 1; i + 2 < r.Length; i += 3)
            {
                var sequence = (long)r[i];
                frames.Add((string?)r[i + 1] == "m"
                    ? DuplexFrame.ForMessage(sequence, DuplexMessage.FromJsonUtf8((byte[])r[i + 2]!))
                    : DuplexFrame.ForGap(sequence, long.Parse((string)r[i + 2]!, CultureInfo.InvariantCulture)));
            }
        }

        return r;
    }

    internal Task EndPollAsync(string id, string tokenHash, long pollNumber) => RunAsync(RedisSessionScripts.EndPoll, id, tokenHash, pollNumber);

    /// <summary>Reads a script's lookup: 0 found, -1 unknown, -2 wrong token, -3 ended (the reason follows).</summary>
    internal static DuplexSessionLookup Read(RedisResult[] r) => (long)r[0] switch
    {
        0 => DuplexSessionLookup.Found(),
        -2 => DuplexSessionLookup.InvalidToken,
        -3 => DuplexSessionLookup.Ended((DuplexSessionEndReason)(long)r[1]),
        _ => DuplexSessionLookup.Unknown,
    };

    /// <summary>The token hash the scripts compare: SHA-256, base64. The token itself is never stored.</summary>
    private static string Hash(string token) => Convert.ToBase64String(SHA256.HashData(System.Text.Encoding.UTF8.GetBytes(token)));

    private static string OperationName(PubSubOperation operation) => operation switch
    {
        PubSubOperation.Subscribe => "subscribe",
        PubSubOperation.Unsubscribe => "unsubscribe",
        _ => "publish",
    };

    private long Now() => TimeProvider.GetUtcNow().ToUnixTimeMilliseconds();

    private async Task<RedisResult> RunAsync(string script, string id, string tokenHash, params RedisValue[] extra)
    {
        RedisValue[] args =
        [
            _prefix,
            id,
            tokenHash,
            Now(),
            (long)Options.InactivityTimeout.TotalMilliseconds,
            (long)FirstPollTimeout.TotalMilliseconds,
            .. extra,
        ];
        try
        {
            return await _db.ScriptEvaluateAsync(script, [(RedisKey)(_prefix + ":s:" + id)], args).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            throw new DuplexStoreUnavailableException(
                $"The session store (Redis) did not answer: {ex.GetType().Name}. Each change is all or nothing, so nothing was half-done; try again.",
                ex);
        }
    }

    /// <summary>A session as a send request found it: its encoding and last received sequence, and the token hash the scripts check.</summary>
    private sealed class RedisSession(string id, string tokenHash, DuplexEncoding encoding, long received) : DuplexStoreSession(id, encoding)
    {
        public string TokenHash { get; } = tokenHash;

        /// <inheritdoc />
        public override long Received => received;
    }
}
