namespace ChannelPool.Testing;

/// <summary>A channel made by <see cref="FakeChannelFactory"/>. It records where it was opened and how it ended.</summary>
public sealed class FakeChannel
{
    private int _users;
    private int _closeCalls;
    private volatile bool _faulted;
    private volatile bool _closed;
    private volatile bool _aborted;

    internal FakeChannel(long id)
    {
        Id = id;
        var thread = Thread.CurrentThread;
        OpenedOnThreadId = thread.ManagedThreadId;
        OpenedOnThreadName = thread.Name;
        OpenedAtPriority = thread.Priority;
        OpenedOnThreadPoolThread = thread.IsThreadPoolThread;
        OpenedAtNiceValue = LinuxThread.CurrentNiceValue();
    }

    /// <summary>Gets the factory's sequence number for this channel.</summary>
    public long Id { get; }

    /// <summary>Gets the managed id of the thread the open ran on.</summary>
    public int OpenedOnThreadId { get; }

    /// <summary>Gets the name of the thread the open ran on.</summary>
    public string? OpenedOnThreadName { get; }

    /// <summary>Gets the managed priority of the thread the open ran on.</summary>
    public ThreadPriority OpenedAtPriority { get; }

    /// <summary>Gets whether the open ran on a thread-pool thread.</summary>
    public bool OpenedOnThreadPoolThread { get; }

    /// <summary>Gets the Linux nice value of the thread the open ran on, or null on other systems.</summary>
    public int? OpenedAtNiceValue { get; }

    /// <summary>Gets whether the channel has faulted.</summary>
    public bool IsFaulted => _faulted;

    /// <summary>Gets whether the channel was closed gracefully.</summary>
    public bool IsClosed => _closed;

    /// <summary>Gets whether the channel was aborted.</summary>
    public bool IsAborted => _aborted;

    /// <summary>Gets whether the channel is still open (neither closed nor aborted).</summary>
    public bool IsOpen => !_closed && !_aborted;

    /// <summary>Gets how many times anyone tried to close or abort it; more than one is a bug in the pool.</summary>
    public int EndCalls => Volatile.Read(ref _closeCalls);

    /// <summary>Makes the channel faulted, as a broken connection would.</summary>
    public void Fault() => _faulted = true;

    /// <summary>Records that a caller started using the channel; false when someone else already is.</summary>
    /// <returns><see langword="true"/> when the caller is the only user.</returns>
    public bool TryBeginUse() => Interlocked.Increment(ref _users) == 1;

    /// <summary>Records that a caller stopped using the channel.</summary>
    public void EndUse() => Interlocked.Decrement(ref _users);

    internal void MarkClosed()
    {
        Interlocked.Increment(ref _closeCalls);
        _closed = true;
    }

    internal void MarkAborted()
    {
        Interlocked.Increment(ref _closeCalls);
        _aborted = true;
    }
}
