using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// One client's session on a polling duplex endpoint, as the application sees it. <see cref="Send"/> queues a
/// message for the client and never blocks; queued messages stay until a poll acknowledges them, and are sent again
/// after a lost response.
/// </summary>
public sealed class DuplexSession
{
    private readonly InMemorySessionStore _store;
    private readonly byte[] _tokenHash;
    private readonly Lock _lock = new();

    // Frames after the last acknowledgement, in sequence order: the frame with sequence s sits at s - (_acked + 1).
    private readonly List<OutboundFrame> _outbound = [];
    private long _acked;
    private long _nextSequence = 1;
    private long _highestSent;
    // What the client is held to account for, waiting for a poll or sent and not yet acknowledged: payload bytes plus
    // HeldFrameOverhead per frame, so a flood of tiny messages is bounded too.
    private long _pendingBytes;

    // Messages queued while no poll was outstanding, since the last poll began: how far the client is really behind,
    // which MaxPendingMessagesPerSession bounds. A burst on its way to a poll the client holds does not count.
    private int _unoffered;
    private PollTicket? _poll;
    // Completed (and cleared) when a poll takes messages or an acknowledgement frees bytes: SendAsync waits on it.
    private TaskCompletionSource? _room;
    private DuplexSessionEndReason? _endReason;
    private long _lastActivity;
    private long _awayUntil;
    private long _received;

    /// <summary>What one held frame costs beyond its payload (its slot, sequence number and share of the message), in bytes.</summary>
    internal const int HeldFrameOverhead = 64;

    internal DuplexSession(InMemorySessionStore store, string id, byte[] tokenHash, DuplexEncoding encoding, PollingDuplexMode mode, string? userId, long now)
    {
        _store = store;
        Id = id;
        _tokenHash = tokenHash;
        Encoding = encoding;
        Mode = mode;
        UserId = userId;
        OpenedAt = now;
        _lastActivity = now;
        AsStoreSession = new Receiver(this);
    }

    /// <summary>Gets the session's id (not a secret; the token is).</summary>
    public string Id { get; }

    /// <summary>
    /// Gets the id of the user who opened the session (<see cref="PollingDuplexOptions.UserIdSelector"/>), or
    /// <see langword="null"/> when it was opened anonymously. Every request of the session comes from this user.
    /// </summary>
    public string? UserId { get; }

    /// <summary>Gets how the session's frames are encoded.</summary>
    public DuplexEncoding Encoding { get; }

    /// <summary>Gets how many frames a poll response carries.</summary>
    public PollingDuplexMode Mode { get; }

    /// <summary>Gets why the session ended, or <see langword="null"/> while it is active.</summary>
    public DuplexSessionEndReason? EndReason
    {
        get
        {
            using (_lock.EnterScope())
            {
                return _endReason;
            }
        }
    }

    /// <summary>Gets the largest message payload the session carries, in bytes: the endpoint's MaxMessageSize, which clients enforce too.</summary>
    public int MaxMessageSize => _store.Options.MaxMessageSize;

    /// <summary>Gets how many topics the session may be subscribed to at once: the endpoint's MaxSubscriptionsPerSession.</summary>
    internal int MaxSubscriptions => _store.Options.MaxSubscriptionsPerSession;

    /// <summary>Gets a place for the application to keep per-session state, for example subscriptions.</summary>
    public ConcurrentDictionary<object, object?> Items { get; } = new();

    /// <summary>Gets the client-to-server sequence number last accepted. Changed only while <see cref="SendGate"/> is held.</summary>
    internal long Received
    {
        get => Volatile.Read(ref _received);
        set => Volatile.Write(ref _received, value);
    }

    /// <summary>Serializes receiving the session's messages, so they reach the application one by one, in order.</summary>
    internal SemaphoreSlim SendGate { get; } = new(1, 1);

    internal bool HasPolled { get; private set; }

    /// <summary>Gets when the session opened: its first-poll deadline counts from here, whatever else it does.</summary>
    internal long OpenedAt { get; }

    /// <summary>Gets or sets the session's place among the never-polled sessions; changed only under <see cref="PendingSessions"/>' lock.</summary>
    internal LinkedListNode<DuplexSession>? PendingNode { get; set; }

    /// <summary>Gets the session as the endpoint's send path sees it; one per session, so a send allocates nothing for it.</summary>
    internal DuplexStoreSession AsStoreSession { get; }

    internal long LastActivity => Volatile.Read(ref _lastActivity);

    /// <summary>Gets or sets who the session counts against: its user, or its address when anonymous (see <c>DuplexSessionStore.OwnerOf</c>).</summary>
    internal string Owner { get; set; } = string.Empty;

    /// <summary>
    /// Queues <paramref name="message"/> for the client. Never blocks. When the session's pending buffer is full, the
    /// endpoint's overflow policy decides: the message is dropped behind a gap marker, or the session faults.
    /// </summary>
    /// <param name="message">The message; a text session takes JSON messages only.</param>
    /// <returns>What happened to the message.</returns>
    /// <exception cref="ArgumentException">
    /// A raw-bytes message was sent on a text session, or the message is larger than <see cref="MaxMessageSize"/>.
    /// </exception>
    public DuplexSendResult Send(DuplexMessage message)
    {
        var options = CheckOutbound(message);
        PollTicket? wake;
        var overflowFault = false;
        DuplexSendResult result;
        using (_lock.EnterScope())
        {
            if (_endReason is not null)
            {
                return DuplexSendResult.SessionEnded;
            }

            var size = message.Payload.Length + HeldFrameOverhead;
            if (IsFull_NoLock(options, size))
            {
                if (options.OverflowPolicy == DuplexOverflowPolicy.FaultSession)
                {
                    overflowFault = true;
                    result = DuplexSendResult.SessionFaulted;
                }
                else
                {
                    AddGap_NoLock();
                    result = DuplexSendResult.Dropped;
                }
            }
            else
            {
                Enqueue_NoLock(message, size);
                result = DuplexSendResult.Queued;
            }

            wake = _poll;
        }

        if (overflowFault)
        {
            _store.Metrics.Dropped();
            _store.End(this, DuplexSessionEndReason.Overflow);
        }
        else if (result == DuplexSendResult.Dropped)
        {
            _store.Metrics.Dropped();
        }

        wake?.Wake();
        return result;
    }

    /// <summary>
    /// Queues <paramref name="message"/> for the client, waiting without blocking a thread while the session's pending
    /// buffer is full, instead of applying the overflow policy. For producers that can slow down to the client's pace,
    /// such as a bulk transfer; fan-out to many sessions should use <see cref="Send"/>, so one slow client cannot hold
    /// up the rest.
    /// </summary>
    /// <param name="message">The message; a text session takes JSON messages only.</param>
    /// <param name="cancellationToken">Stops waiting for room; the message is then not queued.</param>
    /// <returns><see cref="DuplexSendResult.Queued"/>, or <see cref="DuplexSendResult.SessionEnded"/> when the session ended first.</returns>
    /// <exception cref="ArgumentException">
    /// A raw-bytes message was sent on a text session, or the message is larger than <see cref="MaxMessageSize"/>.
    /// </exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting.</exception>
    public async ValueTask<DuplexSendResult> SendAsync(DuplexMessage message, CancellationToken cancellationToken = default)
    {
        var options = CheckOutbound(message);
        var size = message.Payload.Length + HeldFrameOverhead;
        while (true)
        {
            Task room;
            PollTicket? wake;
            using (_lock.EnterScope())
            {
                if (_endReason is not null)
                {
                    return DuplexSendResult.SessionEnded;
                }

                if (IsFull_NoLock(options, size))
                {
                    _room ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                    room = _room.Task;
                    wake = null;
                }
                else
                {
                    Enqueue_NoLock(message, size);
                    wake = _poll;
                    room = Task.CompletedTask;
                }
            }

            if (room.IsCompleted)
            {
                wake?.Wake();
                return DuplexSendResult.Queued;
            }

            await room.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    private bool IsFull_NoLock(PollingDuplexOptions options, int size) =>
        (_poll is null && _unoffered + 1 > options.MaxPendingMessagesPerSession) || _pendingBytes + size > options.MaxPendingBytesPerSession;

    private void Enqueue_NoLock(DuplexMessage message, int size)
    {
        _outbound.Add(new OutboundFrame(_nextSequence++, message));
        _pendingBytes += size;
        if (_poll is null)
        {
            _unoffered++;
        }
    }

    /// <summary>Ends the session from the server side; the client's next request is answered <c>410</c>.</summary>
    public void Close() => _store.End(this, DuplexSessionEndReason.ClosedByServer);

    private PollingDuplexOptions CheckOutbound(DuplexMessage message)
    {
        ArgumentNullException.ThrowIfNull(message);
        if (Encoding == DuplexEncoding.Text && !message.IsJson)
        {
            throw new ArgumentException($"Session {Id} uses the text encoding, which carries JSON messages only.", nameof(message));
        }

        // The validator keeps MaxPendingBytesPerSession at least MaxMessageSize, so a message that passes always fits
        // an empty buffer.
        var options = _store.Options;
        if (message.Payload.Length > options.MaxMessageSize)
        {
            throw new ArgumentException(
                $"A {message.Payload.Length}-byte message exceeds the endpoint's {options.MaxMessageSize}-byte MaxMessageSize, which its clients enforce.",
                nameof(message));
        }

        return options;
    }

    internal bool TokenMatches(ReadOnlySpan<byte> tokenHash) => CryptographicOperations.FixedTimeEquals(tokenHash, _tokenHash);

    internal byte[] TokenHash => _tokenHash;

    internal void Touch()
    {
        Volatile.Write(ref _lastActivity, _store.TimeProvider.GetTimestamp());
        Volatile.Write(ref _awayUntil, 0);
    }

    /// <summary>Gets when the session ends because its page went away (a timestamp), or 0 while it is not away; a request on it sets it back to 0.</summary>
    internal long AwayUntil
    {
        get => Volatile.Read(ref _awayUntil);
        set => Volatile.Write(ref _awayUntil, value);
    }

    /// <summary>
    /// Starts a poll: applies its acknowledgement, and makes it the session's one outstanding poll, superseding any
    /// other. Returns null with <paramref name="ended"/> set when the session is over, or with it null when the
    /// acknowledgement is beyond what was sent.
    /// </summary>
    internal PollTicket? BeginPoll(long ack, out DuplexSessionEndReason? ended, out bool firstPoll)
    {
        PollTicket? previous;
        PollTicket ticket;
        TaskCompletionSource? room;
        firstPoll = false;
        using (_lock.EnterScope())
        {
            ended = _endReason;
            if (ended is not null)
            {
                return null;
            }

            if (ack > _highestSent)
            {
                return null;
            }

            if (ack > _acked)
            {
                Acknowledge_NoLock(ack);
            }

            previous = _poll;
            if (previous is not null)
            {
                previous.Superseded = true;
            }

            ticket = new PollTicket(this, _acked);
            _poll = ticket;

            // Everything queued is now offered to this poll.
            _unoffered = 0;
            room = TakeRoom_NoLock();
            firstPoll = !HasPolled;
            HasPolled = true;
            _lastActivity = _store.TimeProvider.GetTimestamp();
            _awayUntil = 0;
        }

        room?.TrySetResult();
        previous?.Wake();
        return ticket;
    }

    /// <summary>
    /// Takes up to <paramref name="maxFrames"/> frames after the ticket's cursor, marking them sent. With nothing to
    /// take, arms the ticket and returns the task to wait on.
    /// </summary>
    internal DuplexTakeResult TakeFrames(PollTicket ticket, List<DuplexFrame> frames, int maxFrames)
    {
        int delivered = 0, redelivered = 0;
        TaskCompletionSource? room;
        using (_lock.EnterScope())
        {
            if (_endReason is { } ended)
            {
                return DuplexTakeResult.LookupFailed(DuplexSessionLookup.Ended(ended));
            }

            if (ticket.Superseded)
            {
                return DuplexTakeResult.Superseded;
            }

            var span = CollectionsMarshal.AsSpan(_outbound);
            var start = (int)Math.Max(0, ticket.Cursor - _acked);
            for (var i = start; i < span.Length && delivered + redelivered < maxFrames; i++)
            {
                ref var frame = ref span[i];
                if (frame.Sent)
                {
                    redelivered++;
                }
                else
                {
                    frame.Sent = true;
                    delivered++;
                }

                frames.Add(frame.Message is { } message ? DuplexFrame.ForMessage(frame.Sequence, message) : DuplexFrame.ForGap(frame.Sequence, frame.Missed));
                ticket.Cursor = frame.Sequence;
                _highestSent = Math.Max(_highestSent, frame.Sequence);
            }

            if (delivered + redelivered == 0)
            {
                return DuplexTakeResult.Waiting(ticket.Arm());
            }

            room = TakeRoom_NoLock();
        }

        // Counted once a take, outside the lock: a listener's callback runs per Add, not per frame.
        room?.TrySetResult();
        if (delivered > 0)
        {
            _store.Metrics.Delivered(delivered);
        }

        if (redelivered > 0)
        {
            _store.Metrics.Redelivered(redelivered);
        }
        return DuplexTakeResult.Frames;
    }

    /// <summary>Gets whether a poll is outstanding on the session.</summary>
    internal bool HasOutstandingPoll
    {
        get
        {
            using (_lock.EnterScope())
            {
                return _poll is not null;
            }
        }
    }

    /// <summary>Finishes a poll: it is no longer the outstanding one, and counts as activity.</summary>
    internal void EndPoll(PollTicket ticket)
    {
        using (_lock.EnterScope())
        {
            if (_poll == ticket)
            {
                _poll = null;
            }

            _lastActivity = _store.TimeProvider.GetTimestamp();
        }
    }

    /// <summary>Marks the session ended; returns false if it already was. Wakes an outstanding poll.</summary>
    internal bool TryEnd(DuplexSessionEndReason reason, out PollTicket? outstanding)
    {
        TaskCompletionSource? room;
        using (_lock.EnterScope())
        {
            outstanding = _poll;
            if (_endReason is not null)
            {
                return false;
            }

            _endReason = reason;
            _outbound.Clear();
            _unoffered = 0;
            _pendingBytes = 0;
            _poll = null;
            room = TakeRoom_NoLock();
        }

        room?.TrySetResult();
        outstanding?.Wake();
        return true;
    }

    private void Acknowledge_NoLock(long ack)
    {
        // Only frames a poll carried can be acknowledged (ack never exceeds the highest sent), so none was unsent.
        var count = (int)Math.Min(ack - _acked, _outbound.Count);
        for (var i = 0; i < count; i++)
        {
            if (_outbound[i].Message is { } message)
            {
                _pendingBytes -= message.Payload.Length + HeldFrameOverhead;
            }
        }

        _outbound.RemoveRange(0, count);
        _acked = ack;
        if (count > 0)
        {
            // Completing under the lock is safe: continuations run asynchronously.
            TakeRoom_NoLock()?.TrySetResult();
        }
    }

    private TaskCompletionSource? TakeRoom_NoLock()
    {
        var room = _room;
        _room = null;
        return room;
    }

    /// <summary>Records a dropped message: grows the gap at the tail if the client has not seen it yet, or starts one.</summary>
    private void AddGap_NoLock()
    {
        var span = CollectionsMarshal.AsSpan(_outbound);
        if (span.Length > 0 && span[^1] is { Message: null, Sent: false })
        {
            span[^1].Missed++;
            return;
        }

        _outbound.Add(new OutboundFrame(_nextSequence++, null) { Missed = 1 });
    }

    /// <summary>The session as <see cref="DuplexSessionStore.ReceiveAsync"/> takes it: created once, with the session.</summary>
    internal sealed class Receiver(DuplexSession session) : DuplexStoreSession(session.Id, session.Encoding)
    {
        public DuplexSession Session { get; } = session;

        /// <inheritdoc />
        public override long Received => Session.Received;
    }
}

/// <summary>A queued frame: a message, or (with no message) a gap of <see cref="Missed"/> dropped messages.</summary>
internal struct OutboundFrame(long sequence, DuplexMessage? message)
{
    public long Sequence { get; } = sequence;

    public DuplexMessage? Message { get; } = message;

    public long Missed { get; set; }

    public bool Sent { get; set; }
}
