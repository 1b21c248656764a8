namespace ChannelPool;

/// <summary>
/// Opens, checks and closes the channels a <see cref="DefaultChannelPool{TChannel}"/> holds. This is the only thing the pool
/// knows about a transport.
/// </summary>
/// <typeparam name="TChannel">The channel type, for example a WCF channel or a duplex session.</typeparam>
/// <remarks>
/// The pool calls <see cref="OpenAsync"/> and <see cref="CloseAsync"/> on its low-priority background worker, never on
/// a caller's thread. <see cref="IsUsable"/> is called on the lease and release path, so it must be cheap and must not
/// block: read a state flag, do not send a message.
/// </remarks>
public interface IPooledChannelFactory<TChannel>
    where TChannel : class
{
    /// <summary>Opens a new channel, including any handshake or security negotiation it needs.</summary>
    /// <param name="cancellationToken">Cancelled when the attempt times out or the pool shuts down.</param>
    /// <returns>An open channel, ready to be leased.</returns>
    ValueTask<TChannel> OpenAsync(CancellationToken cancellationToken);

    /// <summary>Says whether <paramref name="channel"/> can still carry calls (for example, it has not faulted).</summary>
    /// <param name="channel">A channel this factory opened.</param>
    /// <returns><see langword="true"/> when the channel may be leased again.</returns>
    bool IsUsable(TChannel channel);

    /// <summary>Closes <paramref name="channel"/> gracefully, telling the other side the session is over.</summary>
    /// <param name="channel">A channel this factory opened.</param>
    /// <param name="cancellationToken">Cancelled when the close takes longer than the pool's close timeout; the pool then aborts the channel.</param>
    /// <returns>A task that completes when the channel is closed.</returns>
    ValueTask CloseAsync(TChannel channel, CancellationToken cancellationToken);

    /// <summary>Tears <paramref name="channel"/> down at once, without telling the other side. Must not throw.</summary>
    /// <param name="channel">A channel this factory opened.</param>
    void Abort(TChannel channel);

    /// <summary>
    /// Gets the error that made <paramref name="channel"/> unusable, if the factory saw it (for example the failed call
    /// a wrapper recorded). The pool asks when an unusable channel comes back, and gives the error to
    /// <see cref="ChannelPoolOptions.IsFatalError"/>. The default knows none.
    /// </summary>
    /// <param name="channel">A channel this factory opened, which <see cref="IsUsable"/> just called unusable.</param>
    /// <returns>The error, or <see langword="null"/> when none is known.</returns>
    Exception? GetFailure(TChannel channel) => null;

    /// <summary>
    /// Called when the pool is cleared, before it opens the channels that replace the retired ones: a factory that shares
    /// something between its channels (an HTTP client's connections, a cached security token) starts afresh here, so
    /// that what opens after a clear shares nothing with what the clear retired. The default does nothing.
    /// </summary>
    void Renew()
    {
    }
}
