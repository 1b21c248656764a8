namespace ChannelPool.PollingDuplex.Stores;

/// <summary>
/// Thrown by a <see cref="DuplexSessionStore"/> whose shared storage did not answer. The endpoint answers the request
/// <c>503 store-unavailable</c> with <c>Retry-After: 1</c> and this message, or cuts a response already under way; the
/// client repeats the request. A store throws it only when nothing was half-done.
/// </summary>
public sealed class DuplexStoreUnavailableException : Exception
{
    /// <summary>Initializes a new instance with a generic message.</summary>
    public DuplexStoreUnavailableException()
        : this("The session store did not answer; nothing was half-done, so try again.")
    {
    }

    /// <summary>Initializes a new instance.</summary>
    /// <param name="message">What did not answer, for the client.</param>
    public DuplexStoreUnavailableException(string message)
        : base(message)
    {
    }

    /// <summary>Initializes a new instance.</summary>
    /// <param name="message">What did not answer, for the client.</param>
    /// <param name="innerException">The storage client's error.</param>
    public DuplexStoreUnavailableException(string message, Exception? innerException)
        : base(message, innerException)
    {
    }
}
