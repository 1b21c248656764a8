namespace ChannelPool.PollingDuplex.Client;

/// <summary>
/// A polling duplex request failed for good: the server refused it (with its status and problem <see cref="Code"/>),
/// or the connection stayed down through every retry.
/// </summary>
public sealed class PollingDuplexException : Exception
{
    /// <summary>Initializes a new instance with a generic message.</summary>
    public PollingDuplexException()
        : this("A polling duplex request failed.")
    {
    }

    /// <summary>Initializes a new instance.</summary>
    /// <param name="message">What went wrong.</param>
    public PollingDuplexException(string message)
        : base(message)
    {
    }

    /// <summary>Initializes a new instance.</summary>
    /// <param name="message">What went wrong.</param>
    /// <param name="innerException">The cause.</param>
    public PollingDuplexException(string message, Exception? innerException)
        : base(message, innerException)
    {
    }

    internal PollingDuplexException(int statusCode, string? code, string message, TimeSpan? retryAfter = null)
        : base(message)
    {
        StatusCode = statusCode;
        Code = code;
        RetryAfter = retryAfter;
    }

    /// <summary>Gets the HTTP status the server answered with, if it answered.</summary>
    public int? StatusCode { get; }

    /// <summary>Gets the protocol's error code, for example <c>session-expired</c>, if the server gave one.</summary>
    public string? Code { get; }

    /// <summary>Gets how long the server asked the client to wait before trying again, if it did.</summary>
    public TimeSpan? RetryAfter { get; }

    /// <summary>
    /// Gets whether the session is over for this client: closed, expired, faulted, evicted, unknown, or not reachable
    /// with the client's token or credentials (<c>401</c>, <c>403</c>). A command a topic rule refused
    /// (<c>403 topic-forbidden</c>) ends nothing: the session goes on.
    /// </summary>
    public bool SessionEnded => StatusCode is 401 or 404 or 410 || (StatusCode == 403 && Code != DuplexWire.Codes.TopicForbidden);
}
