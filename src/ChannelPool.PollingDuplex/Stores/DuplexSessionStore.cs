using System.Buffers.Text;
using System.Security.Cryptography;

namespace ChannelPool.PollingDuplex.Stores;

/// <summary>
/// Where one endpoint's sessions live, and what a client's message does to them. The endpoint code is the same for
/// every store: it reads and checks each request, keeps the client's messages in order, holds the long poll, and
/// writes every answer. A store keeps the state behind it: the sessions, their queued frames and acknowledgements,
/// their limits and expiry. The built-in stores keep it in this process (<c>MapPollingDuplex</c>) or in a shared
/// Redis (<c>ChannelPool.PollingDuplex.Redis</c>).
/// </summary>
/// <remarks>
/// The operations are <see langword="protected internal"/>: a store implements them, and only the endpoint code
/// calls them. Each returns a completed <see cref="ValueTask{TResult}"/> when it can, so a store that keeps its state in
/// memory pays no allocation and no thread switch for the seam. docs/polling-duplex.md ("The session store") says
/// what each operation must guarantee.
/// </remarks>
public abstract partial class DuplexSessionStore : IDisposable
{
    /// <summary>Initializes the store of the endpoint mapped at <paramref name="endpoint"/>.</summary>
    /// <param name="endpoint">The pattern the endpoint is mapped at; it names the endpoint in telemetry.</param>
    /// <param name="options">The endpoint's options, as <c>MapPollingDuplex</c> resolved and validated them.</param>
    /// <param name="timeProvider">The clock every timeout is measured on.</param>
    protected DuplexSessionStore(string endpoint, PollingDuplexOptions options, TimeProvider timeProvider)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(endpoint);
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(timeProvider);
        Endpoint = endpoint;
        Options = options;
        TimeProvider = timeProvider;
        Metrics = new PollingDuplexMetrics(endpoint, () => SessionCounts);
    }

    /// <summary>Gets the pattern the endpoint is mapped at.</summary>
    public string Endpoint { get; }

    /// <summary>Gets the endpoint's options.</summary>
    public PollingDuplexOptions Options { get; }

    /// <summary>Gets the clock every timeout is measured on.</summary>
    public TimeProvider TimeProvider { get; }

    /// <summary>
    /// Gets the first-poll deadline that applies: the shorter of <see cref="PollingDuplexOptions.FirstPollTimeout"/> and
    /// <see cref="PollingDuplexOptions.InactivityTimeout"/>.
    /// </summary>
    public TimeSpan FirstPollTimeout => Options.EffectiveFirstPollTimeout;

    internal PollingDuplexMetrics Metrics { get; }

    /// <summary>Gets the sessions by state for the <c>pollingduplex.sessions</c> gauge, or null where the store cannot count them cheaply.</summary>
    internal virtual (int Pending, int Active)? SessionCounts => ReportedSessionCounts;

    /// <inheritdoc />
    public void Dispose()
    {
        Dispose(disposing: true);
        GC.SuppressFinalize(this);
    }

    /// <summary>
    /// Opens a session within the endpoint's limits. Past <see cref="PollingDuplexOptions.MaxConcurrentSessions"/> it
    /// refuses; at <see cref="PollingDuplexOptions.MaxPendingSessions"/> it makes room by ending the oldest session
    /// that has never polled (<see cref="DuplexSessionEndReason.Evicted"/>) rather than refusing the newcomer, so opens
    /// that never poll cannot lock out a client that polls at once. The session counts as pending until its first poll,
    /// and expires <see cref="FirstPollTimeout"/> after it opened without one: only a poll ends the pending state, and
    /// nothing else (a send, say) moves that deadline.
    /// </summary>
    /// <param name="encoding">The encoding the client asked for.</param>
    /// <param name="mode">The mode the client asked for.</param>
    /// <param name="userId">
    /// The id of the user who opened it (<see cref="PollingDuplexOptions.UserIdSelector"/>), or <see langword="null"/>
    /// for an anonymous client. The store keeps it with the session; every later lookup compares it.
    /// </param>
    /// <param name="remoteAddress">
    /// The client's address, or null when unknown: anonymous sessions count against
    /// <see cref="PollingDuplexOptions.MaxSessionsPerAddress"/> by it (see <see cref="OwnerOf"/>).
    /// </param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>The new session's id and token, or which limit refused it, or that the application failed to open it.</returns>
    protected internal abstract ValueTask<DuplexOpenResult> OpenAsync(DuplexEncoding encoding, PollingDuplexMode mode, string? userId, string? remoteAddress, CancellationToken cancellationToken);

    /// <summary>
    /// Ends a session from the server side with <paramref name="reason"/> (a sign-in that expired, say), as
    /// <see cref="CloseSessionAsync"/> does with <see cref="DuplexSessionEndReason.ClosedByServer"/>: its held poll
    /// answers with the reason. Does nothing for a session that has ended. The default closes it as the server.
    /// </summary>
    /// <param name="sessionId">The session.</param>
    /// <param name="reason">Why it ends.</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>A task that completes when the session has ended.</returns>
    protected internal virtual ValueTask EndSessionAsync(string sessionId, DuplexSessionEndReason reason, CancellationToken cancellationToken) =>
        CloseSessionAsync(sessionId, cancellationToken);

    /// <summary>
    /// Gets who a new session counts against, and that owner's limit: a signed-in user by id
    /// (<see cref="PollingDuplexOptions.MaxSessionsPerUser"/>), an anonymous client by address
    /// (<see cref="PollingDuplexOptions.MaxSessionsPerAddress"/>). The owner is also who gives way at
    /// <see cref="PollingDuplexOptions.MaxConcurrentSessions"/> (docs/polling-duplex.md, "No lockout").
    /// </summary>
    /// <param name="userId">The session's user id, or null.</param>
    /// <param name="remoteAddress">The client's address, or null.</param>
    /// <returns>The owner's key (<c>u:</c> + user id, or <c>a:</c> + address) and the most sessions it may hold.</returns>
    protected (string Owner, int Limit) OwnerOf(string? userId, string? remoteAddress) => userId is not null
        ? ("u:" + userId, Options.MaxSessionsPerUser)
        : ("a:" + remoteAddress, Options.MaxSessionsPerAddress);

    /// <summary>
    /// Finds the session a send request names, checking its token in constant time and its user in the same step, and
    /// counts the request as activity. A session whose user is not <paramref name="userId"/> (either being
    /// <see langword="null"/> included) answers <see cref="DuplexLookupStatus.WrongUser"/> and is left as it was. The
    /// activity never extends a pending session's first-poll deadline.
    /// </summary>
    /// <param name="sessionId">The session id from the request's path.</param>
    /// <param name="token">The token the request carried.</param>
    /// <param name="userId">The request's user id, or <see langword="null"/> for an anonymous request.</param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>The session, or why there is none.</returns>
    protected internal abstract ValueTask<DuplexSessionLookup> FindAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken);

    /// <summary>
    /// Receives one client message, if <paramref name="sequence"/> is the next the session expects: does what it means
    /// (hands it to the application, or runs its command) and counts it received, as one step. Exactly once per
    /// sequence number, however many requests (on however many nodes) carry it.
    /// </summary>
    /// <param name="session">The session <see cref="FindAsync"/> found.</param>
    /// <param name="sequence">The message's sequence number.</param>
    /// <param name="message">The message.</param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>Whether the message was accepted, and the last sequence number received.</returns>
    protected internal abstract ValueTask<DuplexReceiveResult> ReceiveAsync(DuplexStoreSession session, long sequence, DuplexMessage message, CancellationToken cancellationToken);

    /// <summary>
    /// Counts one client message received without doing what it asks, because the endpoint refused it (a pub/sub
    /// command on a topic the user may not use): if <paramref name="sequence"/> is the next the session expects, it
    /// becomes the last received and the result is <see cref="DuplexReceiveStatus.Rejected"/> with
    /// <paramref name="reason"/>. Otherwise it answers as <see cref="ReceiveAsync"/> would (already received, out of
    /// order, session gone), and changes nothing. Exactly once per sequence number, as <see cref="ReceiveAsync"/>.
    /// </summary>
    /// <param name="session">The session <see cref="FindAsync"/> found.</param>
    /// <param name="sequence">The refused message's sequence number.</param>
    /// <param name="reason">Why, for the client.</param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>Whether the refusal was counted, and the last sequence number received.</returns>
    protected internal abstract ValueTask<DuplexReceiveResult> RefuseAsync(DuplexStoreSession session, long sequence, string reason, CancellationToken cancellationToken);

    /// <summary>
    /// Starts a poll: frees the frames <paramref name="ack"/> acknowledges, makes the poll the session's one outstanding
    /// poll (a poll it replaces answers <c>409 poll-superseded</c>), ends the session's pending state if this is its
    /// first poll, and counts as activity. A session whose user is not <paramref name="userId"/> answers
    /// <see cref="DuplexLookupStatus.WrongUser"/> and is left as it was: no ack applied, no poll superseded.
    /// </summary>
    /// <param name="sessionId">The session id from the request's path.</param>
    /// <param name="token">The token the request carried.</param>
    /// <param name="userId">The request's user id, or <see langword="null"/> for an anonymous request.</param>
    /// <param name="ack">The highest sequence number the client has received.</param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>The poll, or why it could not start.</returns>
    protected internal abstract ValueTask<DuplexPollStart> BeginPollAsync(string sessionId, string token, string? userId, long ack, CancellationToken cancellationToken);

    /// <summary>
    /// Ends a session because its client closed it. Returns <see cref="DuplexLookupStatus.Ended"/> with the reason when it
    /// had already ended, and <see cref="DuplexLookupStatus.WrongUser"/>, closing nothing, when the request's user is not
    /// the session's.
    /// </summary>
    /// <param name="sessionId">The session id from the request's path.</param>
    /// <param name="token">The token the request carried.</param>
    /// <param name="userId">The request's user id, or <see langword="null"/> for an anonymous request.</param>
    /// <param name="cancellationToken">Cancelled when the client goes away.</param>
    /// <returns>Found when this request closed it, or why not.</returns>
    protected internal abstract ValueTask<DuplexSessionLookup> CloseAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken);

    /// <summary>
    /// Publishes a pub/sub notification from the server side: queues <paramref name="notification"/> (already the
    /// <c>{"topic":…,"data":…}</c> message, serialized once) to every session subscribed to <paramref name="topic"/>,
    /// on every node, each under its own limits and overflow policy. Messages a store publishes to one topic reach each
    /// subscriber in the order they were published.
    /// </summary>
    /// <param name="topic">The topic, already checked (see <see cref="PubSub.PubSubHandler.MaxTopicLength"/>).</param>
    /// <param name="notification">The notification, the same bytes for every subscriber.</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>A task that completes when the notification is queued (in memory) or stored (shared stores).</returns>
    /// <exception cref="NotSupportedException">The endpoint is not a pub/sub endpoint.</exception>
    protected internal abstract ValueTask PublishAsync(string topic, DuplexMessage notification, CancellationToken cancellationToken);

    /// <summary>
    /// Sends <paramref name="message"/> to every live session of the user <paramref name="userId"/>, on every node:
    /// exactly once each, and in the order of this store's calls for that user.
    /// </summary>
    /// <param name="userId">The user's id, as <see cref="PollingDuplexOptions.UserIdSelector"/> gave it.</param>
    /// <param name="message">The message; a JSON message, so that text sessions can carry it too.</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>A task that completes when the message is queued (in memory) or stored (shared stores).</returns>
    protected internal abstract ValueTask SendToUserAsync(string userId, DuplexMessage message, CancellationToken cancellationToken);

    /// <summary>Counts the sessions subscribed to <paramref name="topic"/>: on a shared store, over every node.</summary>
    /// <param name="topic">The topic.</param>
    /// <param name="cancellationToken">Stops waiting for the store.</param>
    /// <returns>How many sessions are subscribed.</returns>
    /// <exception cref="NotSupportedException">The endpoint is not a pub/sub endpoint.</exception>
    protected internal abstract ValueTask<long> CountSubscribersAsync(string topic, CancellationToken cancellationToken);

    /// <summary>Creates a session id: 128 random bits, base64url. Not a secret; the token is.</summary>
    /// <returns>The id.</returns>
    protected static string CreateSessionId() => Base64Url.EncodeToString(RandomNumberGenerator.GetBytes(16));

    /// <summary>Creates a session token: 256 random bits, base64url. Keep only a hash of it.</summary>
    /// <returns>The token.</returns>
    protected static string CreateToken() => Base64Url.EncodeToString(RandomNumberGenerator.GetBytes(32));

    /// <summary>Releases the store's telemetry and whatever else it holds.</summary>
    /// <param name="disposing">Whether this is <see cref="Dispose()"/> rather than a finalizer.</param>
    protected virtual void Dispose(bool disposing)
    {
        if (disposing)
        {
            Metrics.Dispose();
        }
    }
}
