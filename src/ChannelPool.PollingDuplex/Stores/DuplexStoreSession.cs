namespace ChannelPool.PollingDuplex.Stores;

/// <summary>
/// A session as a store found it for one send request: what the endpoint needs to check the request's frames, and
/// what the store needs to receive them.
/// </summary>
public abstract class DuplexStoreSession
{
    /// <summary>Initializes the session's view.</summary>
    /// <param name="id">The session's id.</param>
    /// <param name="encoding">The session's encoding, which its sends must use.</param>
    protected DuplexStoreSession(string id, DuplexEncoding encoding)
    {
        ArgumentException.ThrowIfNullOrEmpty(id);
        Id = id;
        Encoding = encoding;
    }

    /// <summary>Gets the session's id.</summary>
    public string Id { get; }

    /// <summary>Gets the session's encoding.</summary>
    public DuplexEncoding Encoding { get; }

    /// <summary>
    /// Gets the sequence number of the last client message received. The endpoint skips frames at or below it and
    /// refuses a request that skips past it before anything is received; <see cref="DuplexSessionStore.ReceiveAsync"/>
    /// checks each frame again, as one step with receiving it.
    /// </summary>
    public abstract long Received { get; }
}
