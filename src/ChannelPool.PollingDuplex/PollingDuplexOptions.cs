namespace ChannelPool.PollingDuplex;

/// <summary>
/// Settings of one polling duplex endpoint. Names and defaults follow the original WCF polling duplex where they still
/// mean something; docs/polling-duplex.md says what each means here.
/// </summary>
public sealed class PollingDuplexOptions
{
    /// <summary>Gets or sets how long a poll with nothing to deliver is held before an empty answer. Defaults to 15 seconds.</summary>
    public TimeSpan ServerPollTimeout { get; set; } = TimeSpan.FromSeconds(15);

    /// <summary>Gets or sets how long a session may go without any request before it expires. Defaults to 10 minutes.</summary>
    public TimeSpan InactivityTimeout { get; set; } = TimeSpan.FromMinutes(10);

    /// <summary>Gets or sets how many sessions may have opened without yet polling. Defaults to 1,024.</summary>
    public int MaxPendingSessions { get; set; } = 1024;

    /// <summary>Gets or sets how many sessions the endpoint holds at once. Defaults to 100,000.</summary>
    public int MaxConcurrentSessions { get; set; } = 100_000;

    /// <summary>
    /// Gets or sets how many messages may wait for a session's next poll before its overflow policy applies; also the
    /// most frames one multiple-message response carries. Defaults to 8, the original's value.
    /// </summary>
    public int MaxPendingMessagesPerSession { get; set; } = 8;

    /// <summary>
    /// Gets or sets how many payload bytes a session may hold, waiting for a poll or sent and not yet acknowledged.
    /// Defaults to 1 MiB.
    /// </summary>
    public int MaxPendingBytesPerSession { get; set; } = 1024 * 1024;

    /// <summary>Gets or sets the largest message payload in either direction. Defaults to 64 KiB.</summary>
    public int MaxMessageSize { get; set; } = 64 * 1024;

    /// <summary>Gets or sets the largest send request body. Defaults to 1 MiB.</summary>
    public int MaxSendRequestSize { get; set; } = 1024 * 1024;

    /// <summary>Gets or sets what a full pending buffer does. Defaults to <see cref="DuplexOverflowPolicy.FaultSession"/>.</summary>
    public DuplexOverflowPolicy OverflowPolicy { get; set; } = DuplexOverflowPolicy.FaultSession;

    /// <summary>
    /// Gets or sets how long a multiple-message poll response stays open after its first frame to carry more. Frames are
    /// flushed as they are written, so this adds no latency; it sets how often clients acknowledge. Defaults to 20 ms.
    /// </summary>
    public TimeSpan BatchWindow { get; set; } = TimeSpan.FromMilliseconds(20);
}
