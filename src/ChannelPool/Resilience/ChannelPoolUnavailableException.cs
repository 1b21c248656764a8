namespace ChannelPool;

/// <summary>
/// Thrown at once, instead of after a full <see cref="ChannelPoolOptions.AcquireTimeout"/>, when the pool has no idle
/// channel and cannot open one because its circuit breaker is open after repeated open failures; or when the pool is
/// paused and <see cref="ChannelPoolOptions.AcquireWhilePaused"/> says fail (then <see cref="Snapshot"/>'s
/// <see cref="ChannelPoolSnapshot.IsPaused"/> is true).
/// </summary>
/// <remarks>
/// After open failures, <see cref="Exception.InnerException"/> is the last error the channel factory raised, which
/// usually names the real cause (server down, wrong credentials, certificate rejected).
/// </remarks>
public sealed class ChannelPoolUnavailableException : Exception
{
    /// <summary>Initializes a new instance with a generic message.</summary>
    public ChannelPoolUnavailableException()
        : this("The channel pool cannot open channels.")
    {
    }

    /// <summary>Initializes a new instance with <paramref name="message"/>.</summary>
    /// <param name="message">What went wrong.</param>
    public ChannelPoolUnavailableException(string message)
        : base(message)
    {
        PoolName = string.Empty;
    }

    /// <summary>Initializes a new instance with <paramref name="message"/> and the exception that caused it.</summary>
    /// <param name="message">What went wrong.</param>
    /// <param name="innerException">The cause.</param>
    public ChannelPoolUnavailableException(string message, Exception? innerException)
        : base(message, innerException)
    {
        PoolName = string.Empty;
    }

    internal ChannelPoolUnavailableException(string poolName, ChannelPoolSnapshot snapshot, TimeSpan? retryAfter, Exception? lastOpenError)
        : base(FormatMessage(poolName, snapshot, retryAfter, lastOpenError), lastOpenError)
    {
        PoolName = poolName;
        Snapshot = snapshot;
        RetryAfter = retryAfter;
    }

    internal ChannelPoolUnavailableException(string poolName, ChannelPoolSnapshot pausedSnapshot)
        : base($"Pool '{poolName}' is paused: it opens and hands out no channel until it is resumed. ({pausedSnapshot})")
    {
        PoolName = poolName;
        Snapshot = pausedSnapshot;
    }

    internal ChannelPoolUnavailableException(string poolName, ChannelPoolSnapshot snapshot, string reason, Exception? lastOpenError)
        : base($"Pool '{poolName}' turned its waiting callers away: {reason} ({snapshot})", lastOpenError)
    {
        PoolName = poolName;
        Snapshot = snapshot;
    }

    /// <summary>Gets the name of the pool.</summary>
    public string PoolName { get; }

    /// <summary>Gets the pool's counts when the request was refused.</summary>
    public ChannelPoolSnapshot Snapshot { get; }

    /// <summary>Gets how long until the pool tries to open a channel again, when known.</summary>
    public TimeSpan? RetryAfter { get; }

    private static string FormatMessage(string poolName, ChannelPoolSnapshot snapshot, TimeSpan? retryAfter, Exception? lastOpenError)
    {
        var cause = lastOpenError is null ? "repeated open failures" : $"{lastOpenError.GetType().Name}: {lastOpenError.Message}";
        var retry = retryAfter is { } after ? $" It tries again in {after.TotalSeconds:0.#} s." : string.Empty;
        return $"Pool '{poolName}' has no idle channel and cannot open one: its circuit breaker is open after {cause}.{retry} ({snapshot})";
    }
}
