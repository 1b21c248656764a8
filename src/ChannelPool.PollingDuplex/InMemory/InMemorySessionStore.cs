using System.Collections.Concurrent;
using System.Security.Cryptography;
using ChannelPool.PollingDuplex.PubSub;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.Extensions.Logging;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// The store of an endpoint mapped with <c>MapPollingDuplex</c>: its sessions are <see cref="DuplexSession"/> objects in
/// this process, and a client's messages go to the application's <see cref="PollingDuplexHandler"/>. It opens sessions
/// (evicting the oldest never-polled one at the pending limit), finds them for each request (checking the token and the
/// user), ends them and sweeps out the inactive ones.
/// </summary>
/// <remarks>
/// Every operation completes synchronously except where the application's handler does not: the seam costs this store
/// no allocation and no thread switch.
/// </remarks>
internal sealed partial class InMemorySessionStore : DuplexSessionStore
{
    private readonly ConcurrentDictionary<string, DuplexSession> _sessions = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, Tombstone> _tombstones = new(StringComparer.Ordinal);

    // Ended sessions' ids in the order they ended, so the oldest record goes first once MaxEndedSessionRecords is reached.
    private readonly Queue<string> _tombstoneOrder = new();
    private readonly Lock _tombstoneLock = new();
    private readonly PendingSessions _pending;

    // Each signed-in user's live sessions, for SendToUserAsync.
    private readonly SessionGroups _users = new();
    private readonly ILogger _logger;
    private readonly ITimer _sweep;
    private int _sessionCount;
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
        _pending = new PendingSessions(options.MaxPendingSessions);
        var shortest = FirstPollTimeout.Ticks;
        var period = TimeSpan.FromTicks(Math.Clamp(shortest / 4, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerSecond * 5));
        _sweep = timeProvider.CreateTimer(static state => ((InMemorySessionStore)state!).Sweep(), this, period, period);
    }

    public PollingDuplexHandler Handler { get; }

    public int SessionCount => Volatile.Read(ref _sessionCount);

    /// <summary>Gets how many sessions have opened and not yet polled.</summary>
    internal int PendingCount => _pending.Count;

    /// <summary>Gets how many ended sessions are remembered, at most MaxEndedSessionRecords.</summary>
    internal int EndedSessionRecordCount => _tombstones.Count;

    /// <summary>Gets how many users have live sessions.</summary>
    internal int UserCount => _users.Count;

    internal override (int Pending, int Active)? SessionCounts =>
        (_pending.Count, Volatile.Read(ref _sessionCount) - _pending.Count);

    /// <inheritdoc />
    protected internal override async ValueTask<DuplexOpenResult> OpenAsync(DuplexEncoding encoding, PollingDuplexMode mode, string? userId, string? remoteAddress, CancellationToken cancellationToken)
    {
        if (!TryAdmit(encoding, mode, userId, remoteAddress, out var refusal, out var session, out var token))
        {
            return refusal;
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

        // Inactivity only: a pending session's first-poll deadline counts from its open, whatever it sends.
        session?.Touch();
        return new(lookup);
    }

    /// <inheritdoc />
    protected internal override ValueTask<DuplexReceiveResult> ReceiveAsync(DuplexStoreSession session, long sequence, DuplexMessage message, CancellationToken cancellationToken) =>
        ReceiveInOrderAsync(((DuplexSession.Receiver)session).Session, sequence, message, refusal: null, cancellationToken);

    /// <inheritdoc />
    protected internal override ValueTask<DuplexReceiveResult> RefuseAsync(DuplexStoreSession session, long sequence, string reason, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(reason);
        return ReceiveInOrderAsync(((DuplexSession.Receiver)session).Session, sequence, message: null, reason, cancellationToken);
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
            // The one thing that ends the pending state.
            _pending.Remove(session);
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
    protected internal override ValueTask EndSessionAsync(string sessionId, DuplexSessionEndReason reason, CancellationToken cancellationToken)
    {
        if (_sessions.TryGetValue(sessionId, out var session))
        {
            End(session, reason);
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    protected internal override ValueTask PublishAsync(string topic, DuplexMessage notification, CancellationToken cancellationToken)
    {
        PubSub.Publish(topic, notification);
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    protected internal override ValueTask SendToUserAsync(string userId, DuplexMessage message, CancellationToken cancellationToken)
    {
        foreach (var session in _users.Members(userId))
        {
            session.Send(message);
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    protected internal override ValueTask<long> CountSubscribersAsync(string topic, CancellationToken cancellationToken) =>
        new(PubSub.SubscriberCount(topic));

    /// <summary>Reserves room for a new session within MaxConcurrentSessions, or says why not. The pending limit evicts instead (see <see cref="Create"/>).</summary>
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

        return null;
    }

    /// <summary>
    /// Creates a session in the room <see cref="TryReserve"/> made, pending until its first poll; at MaxPendingSessions the
    /// oldest never-polled session is evicted to make room. Returns it with its token, shown only now.
    /// </summary>
    internal (DuplexSession Session, string Token) Create(DuplexEncoding encoding, PollingDuplexMode mode, string? userId = null, string? owner = null)
    {
        var token = CreateToken();
        var tokenHash = HashToken(token);
        DuplexSession session;
        do
        {
            session = new DuplexSession(this, CreateSessionId(), tokenHash, encoding, mode, userId, TimeProvider.GetTimestamp());
        }
        while (!_sessions.TryAdd(session.Id, session));

        Metrics.Opened();
        if (userId is not null)
        {
            _users.Add(userId, session);
        }

        session.Owner = owner ?? OwnerOf(userId, null).Owner;
        _owners.Add(session.Owner, session);

        if (_pending.Add(session) is { } evicted)
        {
            End(evicted, DuplexSessionEndReason.Evicted);
        }

        return (session, token);
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
        _pending.Remove(session);
        if (session.UserId is { } userId)
        {
            _users.Remove(userId, session);
        }

        _owners.Remove(session.Owner, session);

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

    private PubSubHandler PubSub => Handler as PubSubHandler
        ?? throw new NotSupportedException($"Endpoint '{Endpoint}' is not a pub/sub endpoint (its handler is {Handler.GetType().Name}), so it has no topics to publish to or count.");

    /// <summary>
    /// Finds the session a request names and checks its token, in constant time, then its user: a request whose user is
    /// not the session's learns nothing more about it, not even that it ended.
    /// </summary>
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
            return !CryptographicOperations.FixedTimeEquals(tombstone.TokenHash, hash) ? DuplexSessionLookup.InvalidToken
                : !string.Equals(tombstone.UserId, userId, StringComparison.Ordinal) ? DuplexSessionLookup.WrongUser
                : DuplexSessionLookup.Ended(tombstone.Reason);
        }

        return DuplexSessionLookup.Unknown;
    }

    /// <summary>
    /// Receives a message (to the application) or a refusal (the endpoint's; nothing reaches the application), if its
    /// sequence number is the next: one at a time per session, so the application sees them one by one, in order, once each.
    /// </summary>
    private async ValueTask<DuplexReceiveResult> ReceiveInOrderAsync(DuplexSession session, long sequence, DuplexMessage? message, string? refusal, CancellationToken cancellationToken)
    {
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

            if (refusal is not null)
            {
                session.Received = sequence;
                return DuplexReceiveResult.Rejected(sequence, refusal);
            }

            try
            {
                await Handler.OnMessageAsync(session, message!, cancellationToken);
                session.Received = sequence;
                return DuplexReceiveResult.Accepted(sequence);
            }
            catch (DuplexMessageRejectedException ex)
            {
                session.Received = sequence;
                return DuplexReceiveResult.Rejected(sequence, ex.Message);
            }
            catch (SubscriptionLimitException ex)
            {
                session.Received = sequence;
                return DuplexReceiveResult.Rejected(sequence, ex.Message, DuplexWire.Codes.TooManySubscriptions);
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

    /// <summary>Keeps an ended session's record, forgetting the oldest beyond MaxEndedSessionRecords, so any number of opens and closes holds bounded memory.</summary>
    private void Remember(DuplexSession session, DuplexSessionEndReason reason, long forgetAt)
    {
        if (Options.MaxEndedSessionRecords == 0)
        {
            return;
        }

        using (_tombstoneLock.EnterScope())
        {
            _tombstones[session.Id] = new Tombstone(session.TokenHash, session.UserId, reason, forgetAt);
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

        // Measured from the open, never from the last request: sends do not keep a session that never polls pending.
        if (_pending.TakeOpenedBy(now - (long)(FirstPollTimeout.TotalSeconds * TimeProvider.TimestampFrequency)) is { } due)
        {
            foreach (var session in due)
            {
                if (!session.HasPolled)
                {
                    End(session, DuplexSessionEndReason.Expired);
                }
            }
        }

        // A poll in progress touched the session when it began and is bounded by the poll timeout, so only a client that
        // stopped talking, or stopped reading a response, gets here.
        var limit = (long)(Options.InactivityTimeout.TotalSeconds * TimeProvider.TimestampFrequency);
        foreach (var session in _sessions.Values)
        {
            if (now - session.LastActivity > limit || IsAwayPast(session, now))
            {
                End(session, DuplexSessionEndReason.Expired);
            }
        }

        ForgetOpens(now);
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

    private sealed record Tombstone(byte[] TokenHash, string? UserId, DuplexSessionEndReason Reason, long ForgetAt);
}
