using System.Collections.Concurrent;
using System.Security.Cryptography;
using ChannelPool.PollingDuplex.PubSub;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.Extensions.Logging;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// The store of an endpoint mapped with <c>MapPollingDuplex</c>: its sessions are <see cref="DuplexSession"/> objects in
/// this process, and a client's messages go to the application's <see cref="PollingDuplexHandler"/>. It opens sessions,
/// finds them for each request (checking the token), ends them and sweeps out the inactive ones.
/// </summary>
/// <remarks>
/// Every operation completes synchronously except where the application's handler does not: the seam costs this store
/// no allocation and no thread switch.
/// </remarks>
internal sealed class InMemorySessionStore : DuplexSessionStore
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

    public InMemorySessionStore(string endpoint, PollingDuplexOptions options, PollingDuplexHandler handler, TimeProvider timeProvider, ILogger logger)
        : base(endpoint, options, timeProvider)
    {
        Handler = handler;
        if (handler is AsyncPollingDuplexHandler sendsThroughStore)
        {
            AttachHandler(sendsThroughStore);
        }

        _logger = logger;
        var shortest = FirstPollTimeout.Ticks;
        var period = TimeSpan.FromTicks(Math.Clamp(shortest / 4, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerSecond * 5));
        _sweep = timeProvider.CreateTimer(static state => ((InMemorySessionStore)state!).Sweep(), this, period, period);
    }

    public PollingDuplexHandler Handler { get; }

    private PubSubHandler PubSub => Handler as PubSubHandler
        ?? throw new InvalidOperationException($"The endpoint '{Endpoint}' is not a pub/sub endpoint: its handler is {Handler.GetType().Name}, which has no topics.");

    public int SessionCount => Volatile.Read(ref _sessionCount);

    /// <summary>Gets how many ended sessions are remembered, at most MaxEndedSessionRecords.</summary>
    internal int EndedSessionRecordCount => _tombstones.Count;

    internal override (int Pending, int Active)? SessionCounts =>
        (Volatile.Read(ref _pendingCount), Volatile.Read(ref _sessionCount) - Volatile.Read(ref _pendingCount));

    /// <inheritdoc />
    protected internal override async ValueTask<DuplexOpenResult> OpenAsync(DuplexEncoding encoding, PollingDuplexMode mode, string? userId, CancellationToken cancellationToken)
    {
        if (TryReserve() is { } refusal)
        {
            return refusal;
        }

        DuplexSession session;
        string token;
        try
        {
            (session, token) = Create(encoding, mode, userId);
        }
        catch
        {
            Unreserve();
            throw;
        }

        try
        {
            await Handler.OnSessionOpenedAsync(session, cancellationToken);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            End(session, DuplexSessionEndReason.ClosedByServer);
            return DuplexOpenResult.Failed(session.Id, ex);
        }

        return DuplexOpenResult.Opened(session.Id, token);
    }

    /// <inheritdoc />
    protected internal override ValueTask<DuplexSessionLookup> FindAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken)
    {
        var lookup = Find(sessionId, token, userId, out var session);
        session?.Touch();
        return new(lookup);
    }

    /// <inheritdoc />
    protected internal override async ValueTask<DuplexReceiveResult> ReceiveAsync(DuplexStoreSession found, long sequence, DuplexMessage message, CancellationToken cancellationToken)
    {
        var session = ((DuplexSession.Receiver)found).Session;

        // One message at a time per session, so the application sees them one by one, in order, once each.
        await session.SendGate.WaitAsync(cancellationToken);
        try
        {
            var received = session.Received;
            if (session.EndReason is { } ended)
            {
                return DuplexReceiveResult.LookupFailed(DuplexSessionLookup.Ended(ended));
            }

            if (sequence <= received)
            {
                return DuplexReceiveResult.AlreadyReceived(received);
            }

            if (sequence != received + 1)
            {
                return DuplexReceiveResult.OutOfOrder(received);
            }

            try
            {
                await Handler.OnMessageAsync(session, message, cancellationToken);
                session.Received = sequence;
                return DuplexReceiveResult.Accepted(sequence);
            }
            catch (DuplexMessageRejectedException ex)
            {
                session.Received = sequence;
                return DuplexReceiveResult.Rejected(sequence, ex.Message);
            }
            catch (Exception ex) when (ex is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
            {
                return DuplexReceiveResult.Failed(received, ex);
            }
        }
        finally
        {
            session.SendGate.Release();
        }
    }

    /// <inheritdoc />
    protected internal override ValueTask<DuplexPollStart> BeginPollAsync(string sessionId, string token, string? userId, long ack, CancellationToken cancellationToken)
    {
        var lookup = Find(sessionId, token, userId, out var session);
        if (session is null)
        {
            return new(DuplexPollStart.LookupFailed(lookup));
        }

        var ticket = session.BeginPoll(ack, out var ended, out var firstPoll);
        if (ticket is null)
        {
            return new(ended is { } reason ? DuplexPollStart.LookupFailed(DuplexSessionLookup.Ended(reason)) : DuplexPollStart.BeyondSent);
        }

        if (firstPoll)
        {
            Interlocked.Decrement(ref _pendingCount);
        }

        return new(DuplexPollStart.Started(ticket));
    }

    /// <inheritdoc />
    protected internal override ValueTask<DuplexSessionLookup> CloseAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken)
    {
        var lookup = Find(sessionId, token, userId, out var session);
        if (session is not null)
        {
            End(session, DuplexSessionEndReason.ClosedByClient);
        }

        return new(lookup);
    }

    /// <inheritdoc />
    /// <remarks>The synchronous fast path: <see cref="DuplexSession.Send"/> on the session in this process, completed at once.</remarks>
    protected internal override ValueTask<DuplexSendResult> SendAsync(string sessionId, DuplexMessage message, CancellationToken cancellationToken) =>
        new(_sessions.TryGetValue(sessionId, out var session) ? session.Send(message) : DuplexSendResult.SessionEnded);

    /// <inheritdoc />
    protected internal override ValueTask CloseSessionAsync(string sessionId, CancellationToken cancellationToken)
    {
        if (_sessions.TryGetValue(sessionId, out var session))
        {
            End(session, DuplexSessionEndReason.ClosedByServer);
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    protected internal override ValueTask PublishAsync(string topic, DuplexMessage notification, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(topic);
        ArgumentNullException.ThrowIfNull(notification);
        PubSub.Publish(topic, notification);
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    protected internal override ValueTask SendToUserAsync(string userId, DuplexMessage message, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(userId);
        ArgumentNullException.ThrowIfNull(message);
        foreach (var session in _sessions.Values)
        {
            if (session.UserId == userId)
            {
                session.Send(message);
            }
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    protected internal override ValueTask<long> CountSubscribersAsync(string topic, CancellationToken cancellationToken) =>
        new(PubSub.SubscriberCount(topic));

    /// <summary>Reserves room for a new session, or says which limit refuses it.</summary>
    internal DuplexOpenResult? TryReserve()
    {
        if (Volatile.Read(ref _shuttingDown) != 0)
        {
            return DuplexOpenResult.TooManySessions;
        }

        if (Interlocked.Increment(ref _sessionCount) > Options.MaxConcurrentSessions)
        {
            Interlocked.Decrement(ref _sessionCount);
            return DuplexOpenResult.TooManySessions;
        }

        if (Interlocked.Increment(ref _pendingCount) > Options.MaxPendingSessions)
        {
            Interlocked.Decrement(ref _pendingCount);
            Interlocked.Decrement(ref _sessionCount);
            return DuplexOpenResult.TooManyPendingSessions;
        }

        return null;
    }

    /// <summary>Creates a session in the room <see cref="TryReserve"/> made. Returns it with its token, shown only now.</summary>
    internal (DuplexSession Session, string Token) Create(DuplexEncoding encoding, PollingDuplexMode mode, string? userId = null)
    {
        var token = CreateToken();
        while (true)
        {
            var session = new DuplexSession(this, CreateSessionId(), HashToken(token), encoding, mode, TimeProvider.GetTimestamp()) { UserId = userId };
            if (_sessions.TryAdd(session.Id, session))
            {
                Metrics.Opened();
                return (session, token);
            }
        }
    }

    /// <summary>Ends a session once: stops its poll, remembers why for a while, and tells the application.</summary>
    internal void End(DuplexSession session, DuplexSessionEndReason reason)
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
        PollingDuplexLog.SessionEnded(_logger, Endpoint, session.Id, reason);

        // A response stuck behind a client that stopped reading is cut off here, rather than left to time out.
        if (poll is { Responding: true, Context: { } context } && reason is DuplexSessionEndReason.Expired or DuplexSessionEndReason.Overflow)
        {
            context.Abort();
        }

        _ = NotifyEndedAsync(session, reason);
    }

    /// <summary>Ends every session: the server is stopping.</summary>
    internal void Shutdown()
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

    /// <inheritdoc />
    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            _sweep.Dispose();
        }

        base.Dispose(disposing);
    }

    private static byte[] HashToken(string token) => SHA256.HashData(System.Text.Encoding.UTF8.GetBytes(token));

    /// <summary>Finds the session a request names and checks its token, in constant time.</summary>
    private DuplexSessionLookup Find(string id, string token, string? userId, out DuplexSession? session)
    {
        session = null;
        var hash = HashToken(token);
        if (_sessions.TryGetValue(id, out var found))
        {
            if (!found.TokenMatches(hash))
            {
                return DuplexSessionLookup.InvalidToken;
            }

            if (!string.Equals(found.UserId, userId, StringComparison.Ordinal))
            {
                return DuplexSessionLookup.WrongUser;
            }

            session = found;
            return DuplexSessionLookup.Found(found.AsStoreSession);
        }

        if (_tombstones.TryGetValue(id, out var tombstone))
        {
            return CryptographicOperations.FixedTimeEquals(tombstone.TokenHash, hash)
                ? DuplexSessionLookup.Ended(tombstone.Reason)
                : DuplexSessionLookup.InvalidToken;
        }

        return DuplexSessionLookup.Unknown;
    }

    /// <summary>Gives back room reserved for a session that was never created.</summary>
    private void Unreserve()
    {
        Interlocked.Decrement(ref _pendingCount);
        Interlocked.Decrement(ref _sessionCount);
    }

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
        var firstPollLimit = (long)(FirstPollTimeout.TotalSeconds * TimeProvider.TimestampFrequency);
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
            PollingDuplexLog.HandlerFailed(_logger, Endpoint, session.Id, ex);
        }
    }

    private sealed record Tombstone(byte[] TokenHash, DuplexSessionEndReason Reason, long ForgetAt);
}
