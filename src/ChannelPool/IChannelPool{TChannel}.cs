namespace ChannelPool;

/// <summary>
/// A pool of <typeparamref name="TChannel"/> channels: what callers lease from. Depend on this rather than the
/// concrete pool, as <c>ObjectPool&lt;T&gt;</c> users do, so that tests and decorators can stand in for it.
/// </summary>
/// <typeparam name="TChannel">The channel type.</typeparam>
public interface IChannelPool<TChannel> : IChannelPool
    where TChannel : class
{
    /// <summary>
    /// Leases a channel. An idle channel is handed out at once; otherwise the caller waits, first come first served,
    /// for a released channel or a newly opened one.
    /// </summary>
    /// <param name="cancellationToken">Cancels the wait.</param>
    /// <returns>A lease; dispose it to give the channel back.</returns>
    /// <exception cref="ChannelPoolTimeoutException">No channel became free within <see cref="ChannelPoolOptions.AcquireTimeout"/>.</exception>
    /// <exception cref="ChannelPoolUnavailableException">No channel is idle and the breaker stops the pool opening one.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled first.</exception>
    /// <exception cref="ObjectDisposedException">The pool was disposed.</exception>
    ValueTask<ChannelLease<TChannel>> AcquireAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Leases a channel, blocking the calling thread while it waits. For synchronous callers only; prefer
    /// <see cref="AcquireAsync"/>.
    /// </summary>
    /// <param name="cancellationToken">Cancels the wait.</param>
    /// <returns>A lease; dispose it to give the channel back.</returns>
    /// <exception cref="ChannelPoolTimeoutException">No channel became free within <see cref="ChannelPoolOptions.AcquireTimeout"/>.</exception>
    /// <exception cref="ChannelPoolUnavailableException">No channel is idle and the breaker stops the pool opening one.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled first.</exception>
    /// <exception cref="ObjectDisposedException">The pool was disposed.</exception>
    ChannelLease<TChannel> Acquire(CancellationToken cancellationToken = default);
}
