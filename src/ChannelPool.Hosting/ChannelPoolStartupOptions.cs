namespace ChannelPool.Hosting;

/// <summary>How the host starts one pool. Bound from the pool's <c>Startup</c> configuration section.</summary>
public sealed class ChannelPoolStartupOptions
{
    /// <summary>
    /// Gets or sets how many open channels start-up waits for before the application starts serving. 0, the default,
    /// starts the warm-up in the background and does not block start-up. At most the pool's PoolSize.
    /// </summary>
    public int WaitForReadyChannels { get; set; }

    /// <summary>
    /// Gets or sets how long start-up waits for <see cref="WaitForReadyChannels"/> before it fails with an error that
    /// names the pool. Defaults to 30 seconds.
    /// </summary>
    public TimeSpan ReadyTimeout { get; set; } = TimeSpan.FromSeconds(30);
}
