namespace ChannelPool;

/// <summary>
/// Thrown when a caller waited <see cref="ChannelPoolOptions.AcquireTimeout"/> for a channel and none became free.
/// </summary>
/// <remarks>
/// Derives from <see cref="TimeoutException"/> so code that already handles call timeouts keeps working. The
/// <see cref="Snapshot"/> tells a saturated pool (many leased, many waiting) from a leak (leased stays at the maximum
/// while nothing is in use) or a server that will not open channels (opening stuck, breaker open).
/// </remarks>
public sealed class ChannelPoolTimeoutException : TimeoutException
{
    /// <summary>Initializes a new instance with a generic message.</summary>
    public ChannelPoolTimeoutException()
        : this("Timed out waiting for a channel from the pool.")
    {
    }

    /// <summary>Initializes a new instance with <paramref name="message"/>.</summary>
    /// <param name="message">What went wrong.</param>
    public ChannelPoolTimeoutException(string message)
        : base(message)
    {
        PoolName = string.Empty;
    }

    /// <summary>Initializes a new instance with <paramref name="message"/> and the exception that caused it.</summary>
    /// <param name="message">What went wrong.</param>
    /// <param name="innerException">The cause.</param>
    public ChannelPoolTimeoutException(string message, Exception? innerException)
        : base(message, innerException)
    {
        PoolName = string.Empty;
    }

    internal ChannelPoolTimeoutException(string poolName, TimeSpan timeout, ChannelPoolSnapshot snapshot, Exception? lastOpenError)
        : base(FormatMessage(poolName, timeout, snapshot, lastOpenError), lastOpenError)
    {
        PoolName = poolName;
        Timeout = timeout;
        Snapshot = snapshot;
    }

    /// <summary>Gets the name of the pool the caller waited on.</summary>
    public string PoolName { get; }

    /// <summary>Gets how long the caller waited.</summary>
    public TimeSpan Timeout { get; }

    /// <summary>Gets the pool's counts at the moment the wait timed out.</summary>
    public ChannelPoolSnapshot Snapshot { get; }

    private static string FormatMessage(string poolName, TimeSpan timeout, ChannelPoolSnapshot snapshot, Exception? lastOpenError)
    {
        var hint = snapshot.IsPaused ? " The pool is paused: it hands out no channel until it is resumed."
            : snapshot.Leased > 0 && snapshot.Opening == 0 && lastOpenError is null
                ? " Every channel is leased: raise MaxChannels if the load is real, or look for leases that are never released (LeakDetectionThreshold finds them)."
            : lastOpenError is not null ? $" Opening new channels is failing: {lastOpenError.GetType().Name}: {lastOpenError.Message}"
            : string.Empty;
        return $"Timed out after {timeout} waiting for a channel from pool '{poolName}' ({snapshot}).{hint}";
    }
}
