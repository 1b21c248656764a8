namespace ChannelPool;

/// <summary>Which idle channel a lease takes.</summary>
public enum IdleOrder
{
    /// <summary>
    /// The channel released last (a stack, as <c>SocketsHttpHandler</c> and HikariCP effectively do). A light load keeps
    /// reusing the same few warm connections; the rest wait, are checked with the factory's <c>IsUsable</c> before use
    /// like every channel, and are replaced when their lifetime ends. Measured faster on real net.tcp channels
    /// (docs/performance.md).
    /// </summary>
    MostRecentlyUsed = 0,

    /// <summary>
    /// The channel idle longest (a queue). Every idle channel is used in turn, so no server-side session sits idle for
    /// long; each lease touches a connection that has gone cold in the caches since its last use.
    /// </summary>
    LeastRecentlyUsed = 1,
}
