using System.ComponentModel.DataAnnotations;
using Microsoft.Extensions.Options;
using Polly;
using Polly.CircuitBreaker;
using Polly.Retry;
using Polly.Timeout;

namespace ChannelPool;

/// <summary>
/// The pipeline every channel open runs through, as Polly's own strategy options in pipeline order, outermost first:
/// <see cref="TotalTimeout"/>, <see cref="Retry"/>, <see cref="CircuitBreaker"/>, <see cref="AttemptTimeout"/>.
/// </summary>
/// <remarks>
/// <para>
/// Shaped like <c>HttpStandardResilienceOptions</c>: each strategy is validated by Polly's own data annotations, and
/// only the rules that span two strategies are the pool's. The breaker sits inside the retry, so every attempt counts
/// towards it, and the retry never retries a rejection by the breaker: that is what lets the pool stop, rather than
/// hammer a server that is down.
/// </para>
/// <para>
/// The pool builds its pipeline from copies of these objects, so one options instance can serve several pools. The
/// pool adds its own callbacks; a callback set here still runs.
/// </para>
/// </remarks>
public sealed class OpenResilienceOptions
{
    /// <summary>Gets or sets how long one open may take across all its attempts and delays. Defaults to 2 minutes.</summary>
    [Required]
    [ValidateObjectMembers]
    public TimeoutStrategyOptions TotalTimeout { get; set; } = new() { Name = "TotalTimeout", Timeout = TimeSpan.FromMinutes(2) };

    /// <summary>
    /// Gets or sets how failed attempts are retried. Defaults to 3 retries with exponential backoff and jitter from a
    /// median first delay of 500 ms, of every error except cancellation. <see cref="RetryStrategyOptions{TResult}.MaxRetryAttempts"/>
    /// of 0 leaves the retry out of the pipeline; <see cref="RetryStrategyOptions{TResult}.Delay"/> is also the base of
    /// the pause between opens the pipeline gave up on.
    /// </summary>
    // Validated on its own, and only when it is in the pipeline: 0 retries leaves it out (ChannelPoolOptionsValidator).
#pragma warning disable SYSLIB1212
    [Required]
    public RetryStrategyOptions Retry { get; set; } = new()
    {
        MaxRetryAttempts = 3,
        Delay = TimeSpan.FromMilliseconds(500),
        BackoffType = DelayBackoffType.Exponential,
        UseJitter = true,
    };
#pragma warning restore SYSLIB1212

    /// <summary>
    /// Gets or sets the circuit breaker. Defaults to opening when half the attempts in 30 seconds fail, once at least 4
    /// (one wave of <see cref="ChannelPoolOptions.MaxConcurrentOpens"/>) were seen, for a break of 5 seconds.
    /// </summary>
    [Required]
    [ValidateObjectMembers]
    public CircuitBreakerStrategyOptions CircuitBreaker { get; set; } = new()
    {
        FailureRatio = 0.5,
        MinimumThroughput = 4,
        SamplingDuration = TimeSpan.FromSeconds(30),
        BreakDuration = TimeSpan.FromSeconds(5),
    };

    /// <summary>Gets or sets how long one open attempt may take. Defaults to 30 seconds.</summary>
    [Required]
    [ValidateObjectMembers]
    public TimeoutStrategyOptions AttemptTimeout { get; set; } = new() { Name = "AttemptTimeout", Timeout = TimeSpan.FromSeconds(30) };
}
