using System.Runtime.ExceptionServices;
using System.Threading.Tasks.Sources;

namespace ChannelPool;

/// <summary>
/// A caller waiting for a channel. Instances are recycled through an <c>ObjectPool</c>, so waiting allocates little.
/// </summary>
/// <remarks>
/// Async callers await it as an <see cref="IValueTaskSource{TResult}"/>. Blocking callers wait on its event, which the
/// releasing thread sets directly: a blocked caller never needs a thread-pool thread to wake up, so sync callers cannot
/// starve the thread pool the way sync-over-async does. Queue membership changes only under the pool state's gate; the
/// result is delivered after the lock is released.
/// </remarks>
internal sealed class Waiter<TChannel> : IValueTaskSource<ChannelLease<TChannel>>, IDisposable
    where TChannel : class
{
    private readonly DefaultChannelPool<TChannel> _pool;
    private ManualResetValueTaskSourceCore<ChannelLease<TChannel>> _core;
    private ManualResetEventSlim? _wakeUp;
    private ChannelLease<TChannel> _blockingResult;
    private ExceptionDispatchInfo? _blockingError;
    private CancellationTokenSource? _timeout;
    private CancellationTokenRegistration _timeoutRegistration;
    private CancellationTokenRegistration _cancellationRegistration;

    public Waiter(DefaultChannelPool<TChannel> pool)
    {
        _pool = pool;
        _core.RunContinuationsAsynchronously = true;
    }

    // Intrusive FIFO links, owned by WaiterQueue under the pool state's gate.
    internal Waiter<TChannel>? Next { get; set; }

    internal Waiter<TChannel>? Previous { get; set; }

    internal bool IsQueued { get; set; }

    public bool IsBlocking { get; private set; }

    /// <summary>Gets the precise timestamp the wait began, or <c>NotMeasured</c> when wait time is not measured.</summary>
    public long WaitStartedAt { get; private set; }

    public CancellationToken CallerToken { get; private set; }

    /// <summary>Gets the stack of the caller, captured while leak detection is on, for the lease this wait ends in.</summary>
    public System.Diagnostics.StackTrace? AcquiredAt { get; private set; }

    public short Version => _core.Version;

    /// <summary>Readies a (possibly recycled) waiter. The acquire timeout starts counting here, before the caller queues.</summary>
    public void Prepare(bool blocking, long waitStartedAt, TimeSpan timeout, TimeProvider timeProvider, System.Diagnostics.StackTrace? acquiredAt, CancellationToken cancellationToken)
    {
        _core.Reset();
        IsBlocking = blocking;
        WaitStartedAt = waitStartedAt;
        AcquiredAt = acquiredAt;
        CallerToken = cancellationToken;
        _blockingResult = default;
        _blockingError = null;
        if (blocking)
        {
            _wakeUp ??= new ManualResetEventSlim(false);
            _wakeUp.Reset();
        }

        if (timeout != Timeout.InfiniteTimeSpan)
        {
            // Kept across waits and reset in Recycle. TryReset refuses once the timer has fired, and for timers of a
            // TimeProvider other than the system's; then a new source is made.
            _timeout ??= new CancellationTokenSource(Timeout.InfiniteTimeSpan, timeProvider);
            _timeout.CancelAfter(timeout);
        }
    }

    /// <summary>
    /// Starts watching the timeout and the caller's token. Called once the waiter is queued and before the caller can
    /// observe it, so a recycled waiter never carries a live registration. A timeout that already fired runs its
    /// callback here, at once.
    /// </summary>
    public void Watch()
    {
        if (_timeout is not null)
        {
            _timeoutRegistration = _timeout.Token.UnsafeRegister(
                static state => ((Waiter<TChannel>)state!)._pool.AbandonWaiter((Waiter<TChannel>)state, timedOut: true),
                this);
        }

        if (CallerToken.CanBeCanceled)
        {
            _cancellationRegistration = CallerToken.UnsafeRegister(
                static state => ((Waiter<TChannel>)state!)._pool.AbandonWaiter((Waiter<TChannel>)state, timedOut: false),
                this);
        }
    }

    public void Complete(ChannelLease<TChannel> lease)
    {
        if (IsBlocking)
        {
            _blockingResult = lease;
            _wakeUp!.Set();
        }
        else
        {
            _core.SetResult(lease);
        }
    }

    public void Fail(Exception error)
    {
        if (IsBlocking)
        {
            _blockingError = ExceptionDispatchInfo.Capture(error);
            _wakeUp!.Set();
        }
        else
        {
            _core.SetException(error);
        }
    }

    /// <summary>Blocks the calling thread until the waiter completes, then recycles it.</summary>
    public ChannelLease<TChannel> WaitBlocking()
    {
        _wakeUp!.Wait();
        var error = _blockingError;
        var result = _blockingResult;
        Recycle();
        error?.Throw();
        return result;
    }

    ChannelLease<TChannel> IValueTaskSource<ChannelLease<TChannel>>.GetResult(short token)
    {
        try
        {
            return _core.GetResult(token);
        }
        finally
        {
            Recycle();
        }
    }

    ValueTaskSourceStatus IValueTaskSource<ChannelLease<TChannel>>.GetStatus(short token) => _core.GetStatus(token);

    void IValueTaskSource<ChannelLease<TChannel>>.OnCompleted(
        Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _core.OnCompleted(continuation, state, token, flags);

    /// <summary>Frees the wait handle; the waiter pool calls it when it drops this waiter because it is full.</summary>
    public void Dispose()
    {
        _timeout?.Dispose();
        _wakeUp?.Dispose();
    }

    /// <summary>Ends the wait's registrations and returns the waiter to its pool. Idempotent per wait.</summary>
    public void Recycle()
    {
        // Disposing a registration waits for a callback already running, so no stale timeout can reach the next wait.
        _timeoutRegistration.Dispose();
        _cancellationRegistration.Dispose();
        _timeoutRegistration = default;
        _cancellationRegistration = default;
        if (_timeout is not null && !_timeout.TryReset())
        {
            _timeout.Dispose();
            _timeout = null;
        }

        CallerToken = default;
        AcquiredAt = null;
        _pool.ReturnWaiter(this);
    }
}
