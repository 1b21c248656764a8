using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// A session as an <see cref="AsyncPollingDuplexHandler"/> sees it, on any store: its id, user and encoding, and sends
/// that go through the store. It holds nothing of the session's state, so it is valid on any node and after the session
/// ends (a send then answers <see cref="DuplexSendResult.SessionEnded"/>).
/// </summary>
public sealed class DuplexSessionHandle
{
    private readonly DuplexSession? _local;
    private readonly DuplexSessionStore? _store;

    internal DuplexSessionHandle(DuplexSession session)
    {
        _local = session;
        Id = session.Id;
        UserId = session.UserId;
        Encoding = session.Encoding;
        Mode = session.Mode;
    }

    internal DuplexSessionHandle(DuplexSessionStore store, string id, string? userId, DuplexEncoding encoding, PollingDuplexMode mode)
    {
        _store = store;
        Id = id;
        UserId = userId;
        Encoding = encoding;
        Mode = mode;
    }

    /// <summary>Gets the session's id (not a secret; the token is).</summary>
    public string Id { get; }

    /// <summary>Gets the id of the user who opened the session, or null for an anonymous one.</summary>
    public string? UserId { get; }

    /// <summary>Gets how the session's frames are encoded: a text session takes JSON messages only.</summary>
    public DuplexEncoding Encoding { get; }

    /// <summary>Gets how many frames a poll response carries.</summary>
    public PollingDuplexMode Mode { get; }

    /// <summary>
    /// Queues <paramref name="message"/> for the client, through the store: in memory at once, as
    /// <see cref="DuplexSession.Send"/>; on a shared store in one round trip, from any node. Never blocks a thread. When
    /// the session's pending buffer is full, the endpoint's overflow policy decides: the message is dropped behind a gap
    /// marker, or the session faults.
    /// </summary>
    /// <param name="message">The message; a text session takes JSON messages only.</param>
    /// <param name="cancellationToken">Stops waiting for a shared store.</param>
    /// <returns>What happened to the message.</returns>
    /// <exception cref="ArgumentException">A raw-bytes message for a text session, or one larger than the endpoint's MaxMessageSize.</exception>
    /// <exception cref="DuplexStoreUnavailableException">A shared store did not answer; nothing was queued.</exception>
    public ValueTask<DuplexSendResult> SendAsync(DuplexMessage message, CancellationToken cancellationToken = default) =>
        _local is { } session ? new(session.Send(message)) : _store!.SendAsync(Id, message, cancellationToken);

    /// <summary>Ends the session from the server side; the client's next request is answered <c>410</c>.</summary>
    /// <param name="cancellationToken">Stops waiting for a shared store.</param>
    /// <returns>A task that completes when the session has ended.</returns>
    /// <exception cref="DuplexStoreUnavailableException">A shared store did not answer; the session goes on.</exception>
    public ValueTask CloseAsync(CancellationToken cancellationToken = default)
    {
        if (_local is { } session)
        {
            session.Close();
            return ValueTask.CompletedTask;
        }

        return _store!.CloseSessionAsync(Id, cancellationToken);
    }

    /// <inheritdoc />
    public override string ToString() => UserId is null ? Id : $"{Id} ({UserId})";
}
