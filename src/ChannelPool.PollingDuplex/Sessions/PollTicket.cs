using Microsoft.AspNetCore.Http;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// One outstanding poll. It remembers how far this response has got (<see cref="Cursor"/>) and gives the poll handler
/// something to wait on until a frame arrives, a newer poll supersedes it, or the session ends.
/// </summary>
internal sealed class PollTicket(HttpContext context, long cursor)
{
    private TaskCompletionSource? _signal;

    public HttpContext Context { get; } = context;

    /// <summary>Gets or sets the highest sequence number written on this response (or acknowledged before it).</summary>
    public long Cursor { get; set; } = cursor;

    /// <summary>Gets or sets how many frames this response has carried.</summary>
    public int Carried { get; set; }

    /// <summary>Gets or sets whether a newer poll replaced this one. Set under the session's lock.</summary>
    public bool Superseded { get; set; }

    /// <summary>Gets or sets whether the response has started, so errors can no longer be sent as a status.</summary>
    public bool Responding { get; set; }

    /// <summary>Arms a fresh signal to wait on. Called under the session's lock when there is nothing to send.</summary>
    public Task Arm()
    {
        _signal = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        return _signal.Task;
    }

    /// <summary>Wakes the waiting poll handler, if it is waiting.</summary>
    public void Wake() => _signal?.TrySetResult();
}
