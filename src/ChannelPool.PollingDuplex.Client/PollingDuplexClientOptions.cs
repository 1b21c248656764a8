using ChannelPool.PollingDuplex;

namespace ChannelPool.PollingDuplex.Client;

/// <summary>How a <see cref="PollingDuplexClient"/> opens and runs its sessions.</summary>
public sealed class PollingDuplexClientOptions
{
    /// <summary>Gets or sets the encoding sessions ask for. Defaults to <see cref="DuplexEncoding.Binary"/>.</summary>
    public DuplexEncoding Encoding { get; set; } = DuplexEncoding.Binary;

    /// <summary>Gets or sets the mode sessions ask for. Defaults to <see cref="PollingDuplexMode.MultipleMessagesPerPoll"/>.</summary>
    public PollingDuplexMode Mode { get; set; } = PollingDuplexMode.MultipleMessagesPerPoll;

    /// <summary>
    /// Gets or sets how many received messages wait for the application before polling pauses. A session whose
    /// application stops reading stops acknowledging, and the server's overflow policy then applies. Defaults to 1,024.
    /// </summary>
    public int ReceiveBufferCapacity { get; set; } = 1024;

    /// <summary>
    /// Gets or sets how many times a failed poll or send is retried, with exponential backoff and jitter, before the
    /// session is given up as lost. Defaults to 8.
    /// </summary>
    public int MaxRetryAttempts { get; set; } = 8;

    /// <summary>Gets or sets the median delay before the first retry. Defaults to 100 milliseconds.</summary>
    public TimeSpan RetryBaseDelay { get; set; } = TimeSpan.FromMilliseconds(100);

    /// <summary>Gets or sets the longest delay between retries. Defaults to 5 seconds.</summary>
    public TimeSpan RetryMaxDelay { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Gets or sets how long past the server's poll timeout a poll may take before the client treats its connection
    /// as dead and polls again. Defaults to 10 seconds.
    /// </summary>
    public TimeSpan PollGrace { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>Gets or sets how long an open, send or close request may take. Defaults to 30 seconds.</summary>
    public TimeSpan RequestTimeout { get; set; } = TimeSpan.FromSeconds(30);

    internal void Validate()
    {
        if (!Enum.IsDefined(Encoding))
        {
            throw new ArgumentOutOfRangeException(nameof(Encoding), Encoding, "Encoding must be Text or Binary.");
        }

        if (!Enum.IsDefined(Mode))
        {
            throw new ArgumentOutOfRangeException(nameof(Mode), Mode, "Mode must be SingleMessagePerPoll or MultipleMessagesPerPoll.");
        }

        if (ReceiveBufferCapacity < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(ReceiveBufferCapacity), ReceiveBufferCapacity, "ReceiveBufferCapacity must be at least 1.");
        }

        if (MaxRetryAttempts is < 0 or > 100)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxRetryAttempts), MaxRetryAttempts, "MaxRetryAttempts must be between 0 and 100.");
        }

        if (RetryBaseDelay < TimeSpan.Zero || RetryMaxDelay < RetryBaseDelay)
        {
            throw new ArgumentOutOfRangeException(nameof(RetryMaxDelay), RetryMaxDelay, "RetryBaseDelay must be at least zero and RetryMaxDelay at least RetryBaseDelay.");
        }

        if (PollGrace <= TimeSpan.Zero || RequestTimeout <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(RequestTimeout), RequestTimeout, "PollGrace and RequestTimeout must be greater than zero.");
        }
    }
}
