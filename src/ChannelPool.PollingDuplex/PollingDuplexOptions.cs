using System.ComponentModel.DataAnnotations;
using System.Security.Claims;
using ChannelPool.PollingDuplex.PubSub;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// Settings of one polling duplex endpoint. Names and defaults follow the original WCF polling duplex where they still
/// mean something; docs/polling-duplex.md says what each means here.
/// </summary>
public sealed class PollingDuplexOptions
{
    /// <summary>Gets or sets how long a poll with nothing to deliver is held before an empty answer. Defaults to 15 seconds.</summary>
    [Range(typeof(TimeSpan), "00:00:00.010", "00:10:00")]
    public TimeSpan ServerPollTimeout { get; set; } = TimeSpan.FromSeconds(15);

    /// <summary>Gets or sets how long a session may go without any request before it expires. Defaults to 10 minutes.</summary>
    [Range(typeof(TimeSpan), "00:00:00", "1.00:00:00")] // More than ServerPollTimeout plus BatchWindow: a cross-field rule in the validator.
    public TimeSpan InactivityTimeout { get; set; } = TimeSpan.FromMinutes(10);

    /// <summary>
    /// Gets or sets how long a new session may go without its first poll before it expires, counted from its open: only a
    /// poll ends the pending state, and sends on the session do not move the deadline. Shorter than
    /// <see cref="InactivityTimeout"/> on purpose: a client polls at once after opening, and a session that never does
    /// must stop counting against <see cref="MaxPendingSessions"/> soon. The shorter of this and
    /// <see cref="InactivityTimeout"/> applies. Defaults to 15 seconds.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00.010", "1.00:00:00")]
    public TimeSpan FirstPollTimeout { get; set; } = TimeSpan.FromSeconds(15);

    /// <summary>
    /// Gets or sets how long a session outlives its page's <c>away</c> request (<c>POST {base}/sessions/{id}/away</c>,
    /// which the browser client sends when its page goes away for good or reloads): the session ends this long after
    /// it, as <see cref="DuplexSessionEndReason.Expired"/>, unless a request on it (a poll, send or resume) comes first
    /// and gives it back its <see cref="InactivityTimeout"/>. Long enough for a reload to resume; short, so a closed tab
    /// stops holding its session soon. Must be above zero; the shorter of this and <see cref="InactivityTimeout"/> applies.
    /// Defaults to 10 seconds.
    /// </summary>
    public TimeSpan AwayGracePeriod { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Gets or sets how many ended sessions the endpoint remembers, to answer their requests <c>410</c> with the reason
    /// rather than <c>404</c>. The oldest is forgotten first. Defaults to 10,000 (about 2 MB).
    /// </summary>
    [Range(0, int.MaxValue)]
    public int MaxEndedSessionRecords { get; set; } = 10_000;

    /// <summary>
    /// Gets or sets how many sessions may have opened without yet polling. At the limit, a new open ends the oldest of
    /// them (<see cref="DuplexSessionEndReason.Evicted"/>, <c>410 session-evicted</c>) and takes its place, so a flood of
    /// opens that never poll cannot lock out a client that polls at once: that client is evicted only if this many opens
    /// arrive between its open and its first poll. Defaults to 1,024.
    /// </summary>
    [Range(1, int.MaxValue)]
    public int MaxPendingSessions { get; set; } = 1024;

    /// <summary>Gets or sets how many sessions the endpoint holds at once. Defaults to 100,000.</summary>
    [Range(1, int.MaxValue)]
    public int MaxConcurrentSessions { get; set; } = 100_000;

    /// <summary>
    /// Gets or sets how many sessions one signed-in user may hold at once on the endpoint. Past it, that user's opens get
    /// <c>429 too-many-user-sessions</c> until one of their sessions ends; other users are unaffected. It also decides
    /// who gives way at <see cref="MaxConcurrentSessions"/>: see docs/polling-duplex.md, "No lockout". Defaults to 16:
    /// a user's tabs and devices, with room for sessions a crashed page left to expire.
    /// </summary>
    [Range(1, int.MaxValue)]
    public int MaxSessionsPerUser { get; set; } = 16;

    /// <summary>
    /// Gets or sets how many anonymous sessions one remote address may hold at once, as <see cref="MaxSessionsPerUser"/>
    /// does for a signed-in user. Larger, because many clients can share an address behind a NAT or proxy (apply
    /// <c>UseForwardedHeaders</c> behind a proxy you trust, or every client shares the proxy's address). Defaults to 64.
    /// </summary>
    [Range(1, int.MaxValue)]
    public int MaxSessionsPerAddress { get; set; } = 64;

    /// <summary>
    /// Gets or sets how many topics one session of a pub/sub endpoint may be subscribed to at once. A subscribe past it
    /// is answered <c>422 too-many-subscriptions</c>: it counts as received, subscribes to nothing, and the session goes
    /// on. Defaults to 128 (Centrifugo's default channel limit per client).
    /// </summary>
    [Range(1, int.MaxValue)]
    public int MaxSubscriptionsPerSession { get; set; } = 128;

    /// <summary>
    /// Gets or sets how many messages one send request may carry. A request with more is answered
    /// <c>413 too-many-messages</c> and nothing in it is delivered. Clients read it from the open response
    /// (<c>maxMessagesPerSend</c>) and split their batches. Defaults to 64, the same as
    /// <see cref="MaxPendingMessagesPerSession"/>: so one request cannot put a subscriber that polls normally past its
    /// pending limit, and the work one request asks of the server is bounded by count as well as by bytes.
    /// </summary>
    [Range(1, int.MaxValue)]
    public int MaxMessagesPerSend { get; set; } = 64;

    /// <summary>
    /// Gets or sets whether a session ends when the sign-in of its requests expires, as SignalR's
    /// <c>CloseOnAuthenticationExpiration</c>: the expiry is the authentication's <c>ExpiresUtc</c> (a JWT's <c>exp</c>,
    /// a cookie ticket's expiry), read from each request; a request with a newer sign-in moves it. A poll held across the
    /// expiry ends then, answered <c>410 authentication-expired</c>, rather than delivering. Off by default: the session
    /// token, not the sign-in, then authorizes the session's requests for their user.
    /// </summary>
    public bool CloseOnAuthenticationExpiration { get; set; }

    /// <summary>
    /// Gets or sets how many messages a session may fall behind by before its overflow policy applies: messages queued
    /// while it had no poll outstanding, counted from its last poll. A burst on its way to a poll the client holds does
    /// not count. Also the most frames one multiple-message response carries. Defaults to 64, measured (see
    /// docs/polling-duplex.md); the original's 8 faulted clients that were keeping up.
    /// </summary>
    [Range(1, int.MaxValue)]
    public int MaxPendingMessagesPerSession { get; set; } = 64;

    /// <summary>
    /// Gets or sets how many bytes a session may hold, waiting for a poll or sent and not yet acknowledged: each
    /// message's payload plus 64 bytes for its place in the queue. Defaults to 1 MiB.
    /// </summary>
    public int MaxPendingBytesPerSession { get; set; } = 1024 * 1024;

    /// <summary>Gets or sets the largest message payload in either direction. Defaults to 64 KiB.</summary>
    [Range(1, 16 * 1024 * 1024)]
    public int MaxMessageSize { get; set; } = 64 * 1024;

    /// <summary>Gets or sets the largest send request body. Defaults to 1 MiB.</summary>
    public int MaxSendRequestSize { get; set; } = 1024 * 1024;

    /// <summary>Gets or sets what a full pending buffer does. Defaults to <see cref="DuplexOverflowPolicy.FaultSession"/>.</summary>
    [EnumDataType(typeof(DuplexOverflowPolicy), ErrorMessage = "The field {0} must be FaultSession or GapMarker.")]
    public DuplexOverflowPolicy OverflowPolicy { get; set; } = DuplexOverflowPolicy.FaultSession;

    /// <summary>
    /// Gets or sets how long a multiple-message poll response stays open after its first frame to carry more. Frames are
    /// flushed as they are written, so this adds no latency; it sets how often clients acknowledge. A poll that waited
    /// longer than this for its first frame is answered at once instead (its session's messages are not coming close
    /// together, so nothing more would come): one write with a Content-Length. Defaults to 20 ms.
    /// </summary>
    public TimeSpan BatchWindow { get; set; } = TimeSpan.FromMilliseconds(20);

    /// <summary>
    /// Gets or sets how a request's user (<c>HttpContext.User</c>, as the application's authentication set it) becomes the
    /// user id a session records. A session opened by a signed-in user belongs to that user: every later request of the
    /// session must come from the same user id, or it is answered <c>403 wrong-user</c>; a session opened anonymously
    /// takes anonymous requests only. Return <see langword="null"/> for an anonymous user. Defaults to
    /// <see cref="DefaultUserId"/>.
    /// </summary>
    public Func<ClaimsPrincipal, string?> UserIdSelector { get; set; } = DefaultUserId;

    /// <summary>
    /// Gets who may subscribe and publish to which topic, on a pub/sub endpoint (<c>MapPollingDuplexPubSub</c> and the
    /// stores built on it). Mapping one requires a rule here, or <see cref="PubSubTopicOptions.AllowAnonymous"/> set on
    /// purpose. Other endpoints must leave it empty.
    /// </summary>
    public PubSubTopicOptions Topics { get; } = new();

    /// <summary>
    /// The default <see cref="UserIdSelector"/>: <see langword="null"/> for a user who is not authenticated; otherwise the
    /// first of the <see cref="ClaimTypes.NameIdentifier"/> claim, the <c>sub</c> claim, and the identity's name.
    /// </summary>
    /// <param name="user">The request's user.</param>
    /// <returns>The user's id, or <see langword="null"/> when anonymous.</returns>
    /// <exception cref="InvalidOperationException">
    /// The user is authenticated but has none of those claims, so sessions could not be bound to them: set
    /// <see cref="UserIdSelector"/> to say which claim identifies your users.
    /// </exception>
    public static string? DefaultUserId(ClaimsPrincipal user)
    {
        ArgumentNullException.ThrowIfNull(user);
        if (user.Identity is not { IsAuthenticated: true } identity)
        {
            return null;
        }

        return user.FindFirst(ClaimTypes.NameIdentifier)?.Value
            ?? user.FindFirst("sub")?.Value
            ?? identity.Name
            ?? throw new InvalidOperationException(
                $"The signed-in user (authentication type '{identity.AuthenticationType}') has no {ClaimTypes.NameIdentifier}, 'sub' or name claim, so polling duplex sessions cannot be bound to them. Set PollingDuplexOptions.UserIdSelector to the claim that identifies your users.");
    }

    /// <summary>Gets the away grace that applies: the shorter of <see cref="AwayGracePeriod"/> and <see cref="InactivityTimeout"/>.</summary>
    internal TimeSpan EffectiveAwayGracePeriod => AwayGracePeriod < InactivityTimeout ? AwayGracePeriod : InactivityTimeout;

    /// <summary>Gets the first-poll deadline that applies: the shorter of <see cref="FirstPollTimeout"/> and <see cref="InactivityTimeout"/>.</summary>
    internal TimeSpan EffectiveFirstPollTimeout => FirstPollTimeout < InactivityTimeout ? FirstPollTimeout : InactivityTimeout;
}
