using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// One outstanding poll of an in-memory session. It remembers how far this response has got (<see cref="Cursor"/>) and
/// gives the responder something to wait on until a frame arrives, a newer poll supersedes it, or the session ends.
/// </summary>
internal sealed class PollTicket(DuplexSession session, long cursor) : DuplexPoll(session.Id, session.Encoding, session.Mode)
{
    private TaskCompletionSource? _signal;

    /// <summary>Gets or sets the highest sequence number written on this response (or acknowledged before it).</summary>
    public long Cursor { get; set; } = cursor;

    /// <summary>Gets or sets whether a newer poll replaced this one. Set under the session's lock.</summary>
    public bool Superseded { get; set; }

    /// <summary>Arms a fresh signal to wait on. Called under the session's lock when there is nothing to send.</summary>
    public Task Arm()
    {
        _signal = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        return _signal.Task;
    }

    /// <summary>Wakes the waiting responder, if it is waiting.</summary>
    public void Wake() => _signal?.TrySetResult();

    /// <inheritdoc />
    protected internal override ValueTask<DuplexTakeResult> TakeAsync(List<DuplexFrame> frames, int maxFrames, CancellationToken cancellationToken) =>
        new(session.TakeFrames(this, frames, maxFrames));

    /// <inheritdoc />
    protected internal override ValueTask EndAsync(CancellationToken cancellationToken)
    {
        session.EndPoll(this);
        return ValueTask.CompletedTask;
    }
}
