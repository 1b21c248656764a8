using System.Collections.Concurrent;
using System.Security.Cryptography;
using Microsoft.Extensions.Logging;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// One mapped endpoint's sessions: it opens them, finds them for each request (checking the token), ends them and
/// sweeps out the inactive ones. Session state lives in <see cref="DuplexSession"/> objects in this process; the
/// endpoint logic reaches them only through this class, which is the seam for keeping them elsewhere.
/// </summary>
internal sealed partial class PollingDuplexServer : IDisposable
{
    private readonly ConcurrentDictionary<string, DuplexSession> _sessions = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, Tombstone> _tombstones = new(StringComparer.Ordinal);

    // Ended sessions' ids in the order they ended, so the oldest record goes first once MaxEndedSessionRecords is reached.
    private readonly Queue<string> _tombstoneOrder = new();
    private readonly Lock _tombstoneLock = new();
    private readonly ILogger _logger;
    private readonly ITimer _sweep;
    private int _sessionCount;
    private int _pendingCount;
    private int _shuttingDown;

    public PollingDuplexServer(string endpoint, PollingDuplexOptions options, PollingDuplexHandler handler, TimeProvider timeProvider, ILogger logger)
    {
        Endpoint = endpoint;
        Options = options;
        Handler = handler;
        TimeProvider = timeProvider;
        _logger = logger;
        Metrics = new PollingDuplexMetrics(endpoint, () => (Volatile.Read(ref _pendingCount), Volatile.Read(ref _sessionCount) - Volatile.Read(ref _pendingCount)));
        var shortest = options.EffectiveFirstPollTimeout.Ticks;
        var period = TimeSpan.FromTicks(Math.Clamp(shortest / 4, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerSecond * 5));
        _sweep = timeProvider.CreateTimer(static state => ((PollingDuplexServer)state!).Sweep(), this, period, period);
    }

    public string Endpoint { get; }

    public PollingDuplexOptions Options { get; }

    public PollingDuplexHandler Handler { get; }

    public TimeProvider TimeProvider { get; }

    public PollingDuplexMetrics Metrics { get; }

    public int SessionCount => Volatile.Read(ref _sessionCount);

    /// <summary>Gets how many ended sessions are remembered, at most MaxEndedSessionRecords.</summary>
    internal int EndedSessionRecordCount => _tombstones.Count;

    /// <summary>Reserves room for a new session, or says which limit refuses it.</summary>
    public string? TryReserve()
    {
        if (Volatile.Read(ref _shuttingDown) != 0)
        {
            return DuplexWire.Codes.TooManySessions;
        }

        if (Interlocked.Increment(ref _sessionCount) > Options.MaxConcurrentSessions)
        {
            Interlocked.Decrement(ref _sessionCount);
            return DuplexWire.Codes.TooManySessions;
        }

        if (Interlocked.Increment(ref _pendingCount) > Options.MaxPendingSessions)
        {
            Interlocked.Decrement(ref _pendingCount);
            Interlocked.Decrement(ref _sessionCount);
            return DuplexWire.Codes.TooManyPendingSessions;
        }

        return null;
    }

    /// <summary>Creates a session in the room <see cref="TryReserve"/> made. Returns it with its token, shown only now.</summary>
    public (DuplexSession Session, string Token) Create(DuplexEncoding encoding, PollingDuplexMode mode)
    {
        var token = Base64Url(RandomNumberGenerator.GetBytes(32));
        while (true)
        {
            var id = Base64Url(RandomNumberGenerator.GetBytes(16));
            var session = new DuplexSession(this, id, HashToken(token), encoding, mode, TimeProvider.GetTimestamp());
            if (_sessions.TryAdd(id, session))
            {
                Metrics.Opened();
                return (session, token);
            }
        }
    }

    /// <summary>Gives back room reserved for a session that was never created, or whose opening failed.</summary>
    public void Unreserve()
    {
        Interlocked.Decrement(ref _pendingCount);
        Interlocked.Decrement(ref _sessionCount);
    }

    /// <summary>Finds the session a request names and checks its token, in constant time.</summary>
    public SessionLookup Find(string id, string? token, out DuplexSession? session, out DuplexSessionEndReason? endedBecause)
    {
        session = null;
        endedBecause = null;
        if (token is null)
        {
            return SessionLookup.MissingToken;
        }

        var hash = HashToken(token);
        if (_sessions.TryGetValue(id, out var found))
        {
            if (!found.TokenMatches(hash))
            {
                return SessionLookup.InvalidToken;
            }

            session = found;
            return SessionLookup.Found;
        }

        if (_tombstones.TryGetValue(id, out var tombstone))
        {
            if (!CryptographicOperations.FixedTimeEquals(tombstone.TokenHash, hash))
            {
                return SessionLookup.InvalidToken;
            }

            endedBecause = tombstone.Reason;
            return SessionLookup.Ended;
        }

        return SessionLookup.Unknown;
    }

    /// <summary>Counts a session's first poll: it is no longer pending.</summary>
    public void FirstPoll() => Interlocked.Decrement(ref _pendingCount);

    /// <summary>Ends a session once: stops its poll, remembers why for a while, and tells the application.</summary>
    public void End(DuplexSession session, DuplexSessionEndReason reason)
    {
        if (!session.TryEnd(reason, out var poll))
        {
            return;
        }

        _sessions.TryRemove(session.Id, out _);
        var forgetAt = TimeProvider.GetTimestamp() + (long)(Options.InactivityTimeout.TotalSeconds * 2 * TimeProvider.TimestampFrequency);
        Remember(session, reason, forgetAt);
        if (!session.HasPolled)
        {
            Interlocked.Decrement(ref _pendingCount);
        }

        Interlocked.Decrement(ref _sessionCount);
        Metrics.Ended(reason);
        LogSessionEnded(_logger, Endpoint, session.Id, reason);

        // A response stuck behind a client that stopped reading is cut off here, rather than left to time out.
        if (poll is { Responding: true } && reason is DuplexSessionEndReason.Expired or DuplexSessionEndReason.Overflow)
        {
            poll.Context.Abort();
        }

        _ = NotifyEndedAsync(session, reason);
    }

    /// <summary>Ends every session: the server is stopping.</summary>
    public void Shutdown()
    {
        if (Interlocked.Exchange(ref _shuttingDown, 1) != 0)
        {
            return;
        }

        foreach (var session in _sessions.Values)
        {
            End(session, DuplexSessionEndReason.ServerShutdown);
        }
    }

    public void Dispose()
    {
        _sweep.Dispose();
        Metrics.Dispose();
    }

    internal static byte[] HashToken(string token) => SHA256.HashData(System.Text.Encoding.UTF8.GetBytes(token));

    internal static string Base64Url(byte[] bytes) => Convert.ToBase64String(bytes).TrimEnd('=').Replace('+', '-').Replace('/', '_');

    /// <summary>Keeps an ended session's record, forgetting the oldest beyond MaxEndedSessionRecords, so any number of opens and closes holds bounded memory.</summary>
    private void Remember(DuplexSession session, DuplexSessionEndReason reason, long forgetAt)
    {
        if (Options.MaxEndedSessionRecords == 0)
        {
            return;
        }

        using (_tombstoneLock.EnterScope())
        {
            _tombstones[session.Id] = new Tombstone(session.TokenHash, reason, forgetAt);
            _tombstoneOrder.Enqueue(session.Id);
            while (_tombstoneOrder.Count > Options.MaxEndedSessionRecords && _tombstoneOrder.TryDequeue(out var oldest))
            {
                _tombstones.TryRemove(oldest, out _);
            }
        }
    }

    private void Sweep()
    {
        var now = TimeProvider.GetTimestamp();
        var limit = (long)(Options.InactivityTimeout.TotalSeconds * TimeProvider.TimestampFrequency);
        var firstPollLimit = (long)(Options.EffectiveFirstPollTimeout.TotalSeconds * TimeProvider.TimestampFrequency);
        foreach (var session in _sessions.Values)
        {
            // A poll in progress touched the session when it began and is bounded by the poll timeout, so only a
            // client that stopped talking, or stopped reading a response, gets here. A session that never polled has
            // the shorter first-poll deadline, so opens that never poll cannot hold MaxPendingSessions for long.
            var idle = now - session.LastActivity;
            if (idle > limit || (!session.HasPolled && idle > firstPollLimit))
            {
                End(session, DuplexSessionEndReason.Expired);
            }
        }

        using (_tombstoneLock.EnterScope())
        {
            // Records are kept in the order sessions ended and live equally long, so the expired ones are at the head.
            while (_tombstoneOrder.TryPeek(out var id) && (!_tombstones.TryGetValue(id, out var tombstone) || now > tombstone.ForgetAt))
            {
                _tombstoneOrder.Dequeue();
                _tombstones.TryRemove(id, out _);
            }
        }
    }

    private async Task NotifyEndedAsync(DuplexSession session, DuplexSessionEndReason reason)
    {
        await Task.Yield();
        try
        {
            await Handler.OnSessionEndedAsync(session, reason).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            LogHandlerFailed(_logger, Endpoint, session.Id, ex);
        }
    }

    [LoggerMessage(1, LogLevel.Debug, "Polling duplex '{Endpoint}': session {SessionId} ended ({Reason}).")]
    private static partial void LogSessionEnded(ILogger logger, string endpoint, string sessionId, DuplexSessionEndReason reason);

    [LoggerMessage(2, LogLevel.Error, "Polling duplex '{Endpoint}': the application's handler failed for session {SessionId}.")]
    internal static partial void LogHandlerFailed(ILogger logger, string endpoint, string sessionId, Exception error);

    private sealed record Tombstone(byte[] TokenHash, DuplexSessionEndReason Reason, long ForgetAt);
}

/// <summary>What a request's session id and token found.</summary>
internal enum SessionLookup
{
    Found,
    MissingToken,
    InvalidToken,
    Ended,
    Unknown,
}
