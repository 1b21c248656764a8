using System.ComponentModel.DataAnnotations;

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
    /// Gets or sets how long a new session may go without its first poll before it expires. Shorter than
    /// <see cref="InactivityTimeout"/> on purpose: a client polls at once after opening, and a session that never does
    /// must stop counting against <see cref="MaxPendingSessions"/> soon. The shorter of this and
    /// <see cref="InactivityTimeout"/> applies. Defaults to 15 seconds.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00.010", "1.00:00:00")]
    public TimeSpan FirstPollTimeout { get; set; } = TimeSpan.FromSeconds(15);

    /// <summary>
    /// Gets or sets how many ended sessions the endpoint remembers, to answer their requests <c>410</c> with the reason
    /// rather than <c>404</c>. The oldest is forgotten first. Defaults to 10,000 (about 2 MB).
    /// </summary>
    [Range(0, int.MaxValue)]
    public int MaxEndedSessionRecords { get; set; } = 10_000;

    /// <summary>Gets or sets how many sessions may have opened without yet polling. Defaults to 1,024.</summary>
    [Range(1, int.MaxValue)]
    public int MaxPendingSessions { get; set; } = 1024;

    /// <summary>Gets or sets how many sessions the endpoint holds at once. Defaults to 100,000.</summary>
    [Range(1, int.MaxValue)]
    public int MaxConcurrentSessions { get; set; } = 100_000;

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
    /// flushed as they are written, so this adds no latency; it sets how often clients acknowledge. Defaults to 20 ms.
    /// </summary>
    public TimeSpan BatchWindow { get; set; } = TimeSpan.FromMilliseconds(20);

    /// <summary>Gets the first-poll deadline that applies: the shorter of <see cref="FirstPollTimeout"/> and <see cref="InactivityTimeout"/>.</summary>
    internal TimeSpan EffectiveFirstPollTimeout => FirstPollTimeout < InactivityTimeout ? FirstPollTimeout : InactivityTimeout;
}
