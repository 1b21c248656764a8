namespace ChannelPool.PollingDuplex.Stores;

/// <summary>
/// The two rules a browser page needs beyond the four requests: a retried open gets the first open's answer (the
/// client's <c>openId</c>), and a page that went away keeps its session only for <see cref="PollingDuplexOptions.AwayGracePeriod"/>.
/// </summary>
public abstract partial class DuplexSessionStore
{
    /// <summary>How long an open's answer is remembered for a repeat with its <c>openId</c>, at most: 2 minutes, or until its session ends.</summary>
    public static readonly TimeSpan OpenIdRetention = TimeSpan.FromMinutes(2);

    /// <summary>
    /// Finds the answer an earlier open with <paramref name="openId"/> by the same user got, while its session lives and
    /// for at most <see cref="OpenIdRetention"/>. Another user's open with the same id is not found. The default
    /// remembers nothing: every open opens a new session.
    /// </summary>
    /// <param name="openId">The client's id for the open, already checked (16 to 64 characters of <c>A-Z a-z 0-9 _ -</c>).</param>
    /// <param name="userId">The request's user id, or <see langword="null"/> for an anonymous request.</param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>The earlier answer, or null.</returns>
    protected internal virtual ValueTask<DuplexRememberedOpen?> FindOpenAsync(string openId, string? userId, CancellationToken cancellationToken) =>
        ValueTask.FromResult<DuplexRememberedOpen?>(null);

    /// <summary>
    /// Remembers <paramref name="opened"/> as the answer to <paramref name="openId"/> of <paramref name="userId"/>, unless
    /// a concurrent open with the same id got there first: then returns that one's answer, and the endpoint closes the
    /// session this open made. The default remembers nothing and returns <paramref name="opened"/>.
    /// </summary>
    /// <param name="openId">The client's id for the open.</param>
    /// <param name="userId">The request's user id, or <see langword="null"/>.</param>
    /// <param name="opened">The answer this open got.</param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>The answer that stands for <paramref name="openId"/>.</returns>
    protected internal virtual ValueTask<DuplexRememberedOpen> RememberOpenAsync(string openId, string? userId, DuplexRememberedOpen opened, CancellationToken cancellationToken) =>
        ValueTask.FromResult(opened);

    /// <summary>
    /// The session's page went away (<c>POST {base}/sessions/{id}/away</c>): the session now ends
    /// <see cref="PollingDuplexOptions.AwayGracePeriod"/> from now (as <see cref="DuplexSessionEndReason.Expired"/>)
    /// unless a request on it comes first, which gives it back its full <see cref="PollingDuplexOptions.InactivityTimeout"/>.
    /// Checks the token and the user as <see cref="FindAsync"/> does. The default changes nothing, so the session lives
    /// out its inactivity timeout.
    /// </summary>
    /// <param name="sessionId">The session id from the request's path.</param>
    /// <param name="token">The token the request carried.</param>
    /// <param name="userId">The request's user id, or <see langword="null"/>.</param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>Found when the grace started, or why there is no session.</returns>
    protected internal virtual async ValueTask<DuplexSessionLookup> AwayAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken)
    {
        var lookup = await FindAsync(sessionId, token, userId, cancellationToken).ConfigureAwait(false);
        return lookup.Status == DuplexLookupStatus.Found ? DuplexSessionLookup.Found() : lookup;
    }
}

/// <summary>The answer an open got, as a repeat of it (same <c>openId</c>, same user) gets it again.</summary>
/// <param name="sessionId">The session's id.</param>
/// <param name="token">The session's token.</param>
/// <param name="encoding">The session's encoding.</param>
/// <param name="mode">The session's mode.</param>
public sealed class DuplexRememberedOpen(string sessionId, string token, DuplexEncoding encoding, PollingDuplexMode mode)
{
    /// <summary>Gets the session's id.</summary>
    public string SessionId { get; } = sessionId;

    /// <summary>Gets the session's token.</summary>
    public string Token { get; } = token;

    /// <summary>Gets the session's encoding.</summary>
    public DuplexEncoding Encoding { get; } = encoding;

    /// <summary>Gets the session's mode.</summary>
    public PollingDuplexMode Mode { get; } = mode;
}
