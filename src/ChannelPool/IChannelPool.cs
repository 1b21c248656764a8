namespace ChannelPool;

/// <summary>
/// A pool seen without its channel type: what hosting, health checks and dashboards need to warm it, watch it, retune
/// it and drain it. <see cref="IChannelPool{TChannel}"/> adds leasing; <see cref="DefaultChannelPool{TChannel}"/> implements both.
/// </summary>
public interface IChannelPool : IAsyncDisposable, IDisposable
{
    /// <summary>Gets the pool's name.</summary>
    string Name { get; }

    /// <summary>Gets what release does with a channel.</summary>
    LeaseMode LeaseMode { get; }

    /// <summary>
    /// Gets the idle count refills fill back up to when the idle target is fixed; with an adaptive target, where the
    /// target starts and what a warm-up opens (<see cref="ChannelPoolSnapshot.IdleTarget"/> gives the target in force).
    /// </summary>
    int PoolSize { get; }

    /// <summary>Gets the idle count at or below which a refill starts, in force: it follows an adaptive idle target.</summary>
    int RefillThreshold { get; }

    /// <summary>Gets the cap on opening, idle and leased channels together.</summary>
    int MaxChannels { get; }

    /// <summary>Takes a consistent snapshot of the pool's counts.</summary>
    /// <returns>The counts at this moment.</returns>
    ChannelPoolSnapshot GetSnapshot();

    /// <summary>Starts filling the pool and waits until <paramref name="readyChannels"/> channels are open.</summary>
    /// <param name="readyChannels">How many open channels to wait for, from 0 to <see cref="PoolSize"/>.</param>
    /// <param name="cancellationToken">Stops the wait; filling goes on in the background.</param>
    /// <returns>A task that completes when enough channels are open.</returns>
    Task WarmUpAsync(int readyChannels, CancellationToken cancellationToken = default);

    /// <summary>Shuts the pool down: closes idle channels, waits for leases, aborts the rest.</summary>
    /// <param name="cancellationToken">Cuts the waiting short.</param>
    /// <returns>A task that completes when the drain is done.</returns>
    Task DrainAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Retires every channel opened before this call (idle ones now, leased ones when their leases end) and refills with
    /// new ones, for example after the service's certificate was replaced.
    /// </summary>
    /// <param name="cancellationToken">Stops the wait for the closes; the clear stays in force.</param>
    /// <returns>A task that completes when every retired channel has closed.</returns>
    Task ClearAsync(CancellationToken cancellationToken = default);

    /// <summary>Stops opening and handing out channels until <see cref="Resume"/>; leases already out go on.</summary>
    /// <exception cref="InvalidOperationException">The pool is already paused.</exception>
    void Pause();

    /// <summary>Resumes a paused pool: waiting callers are served first, then it refills.</summary>
    /// <exception cref="InvalidOperationException">The pool is not paused.</exception>
    // The word HikariCP and operators use; Visual Basic callers write it [Resume].
#pragma warning disable CA1716
    void Resume();
#pragma warning restore CA1716

    /// <summary>Applies new settings to the running pool.</summary>
    /// <param name="options">The new settings; validated first.</param>
    void Reconfigure(ChannelPoolOptions options);
}
