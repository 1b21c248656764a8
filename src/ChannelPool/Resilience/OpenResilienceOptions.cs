namespace ChannelPool;

/// <summary>
/// Settings of the pipeline every channel open runs through, outermost first: total timeout, retry with exponential
/// backoff and jitter, circuit breaker, attempt timeout.
/// </summary>
public sealed class OpenResilienceOptions
{
    /// <summary>Gets or sets how long one open attempt may take. Defaults to 30 seconds.</summary>
    public TimeSpan AttemptTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>Gets or sets how long one open may take across all its attempts and delays. Defaults to 2 minutes.</summary>
    public TimeSpan TotalTimeout { get; set; } = TimeSpan.FromMinutes(2);

    /// <summary>Gets or sets how many times a failed attempt is retried. 0 turns retry off. Defaults to 3.</summary>
    public int MaxRetryAttempts { get; set; } = 3;

    /// <summary>
    /// Gets or sets the median delay before the first retry; later retries double it, with jitter. Also the base of
    /// the pause between failed opens. Defaults to 500 milliseconds.
    /// </summary>
    public TimeSpan RetryBaseDelay { get; set; } = TimeSpan.FromMilliseconds(500);

    /// <summary>
    /// Gets or sets the share of failed attempts within <see cref="BreakerSamplingDuration"/> that opens the breaker.
    /// Defaults to 0.5.
    /// </summary>
    public double BreakerFailureRatio { get; set; } = 0.5;

    /// <summary>
    /// Gets or sets how many attempts must be seen within <see cref="BreakerSamplingDuration"/> before the breaker may
    /// open. Defaults to 4, one wave of <see cref="ChannelPoolOptions.MaxConcurrentOpens"/>.
    /// </summary>
    public int BreakerMinimumThroughput { get; set; } = 4;

    /// <summary>Gets or sets the window over which the failure ratio is measured. Defaults to 30 seconds.</summary>
    public TimeSpan BreakerSamplingDuration { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Gets or sets how long the breaker stays open, with opens paused and waiting callers failed fast, before one
    /// probe open is allowed. Defaults to 5 seconds.
    /// </summary>
    public TimeSpan BreakerBreakDuration { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Gets or sets a test for errors worth retrying. Errors it rejects, such as rejected credentials, still count
    /// towards the breaker but are not retried. When <see langword="null"/>, every error except cancellation is retried.
    /// </summary>
    public Func<Exception, bool>? ShouldRetry { get; set; }
}
