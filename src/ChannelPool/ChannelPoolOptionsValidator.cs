using System.Globalization;
using Microsoft.Extensions.Options;

namespace ChannelPool;

/// <summary>
/// Checks every <see cref="ChannelPoolOptions"/> rule, single-field and cross-field, in one place. The pool runs it
/// when it is created; the hosting package registers it so a bad configuration stops start-up.
/// </summary>
/// <remarks>Each failure names the pool, the option, the rule and the value that broke it.</remarks>
internal sealed class ChannelPoolOptionsValidator : IValidateOptions<ChannelPoolOptions>
{
    private static readonly TimeSpan OneDay = TimeSpan.FromDays(1);

    /// <inheritdoc />
    public ValidateOptionsResult Validate(string? name, ChannelPoolOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var failures = new List<string>();
        var pool = options.Name ?? name;
        var prefix = string.IsNullOrEmpty(pool) ? string.Empty : $"Channel pool '{pool}': ";
        void Fail(string option, string rule, object value) =>
            failures.Add(string.Create(CultureInfo.InvariantCulture, $"{prefix}{option} {rule}; it was {value}."));

        if (options.Name is not null && string.IsNullOrWhiteSpace(options.Name))
        {
            Fail(nameof(options.Name), "must not be empty or white space when it is set", $"'{options.Name}'");
        }

        if (options.MaxChannels < 1)
        {
            Fail(nameof(options.MaxChannels), "must be at least 1", options.MaxChannels);
        }

        if (options.PoolSize < 1 || options.PoolSize > Math.Max(1, options.MaxChannels))
        {
            Fail(nameof(options.PoolSize), $"must be between 1 and MaxChannels ({options.MaxChannels})", options.PoolSize);
        }

        if (options.RefillThreshold < 0 || options.RefillThreshold >= Math.Max(1, options.PoolSize))
        {
            Fail(nameof(options.RefillThreshold), $"must be at least 0 and less than PoolSize ({options.PoolSize})", options.RefillThreshold);
        }

        if (options.ChannelLifetime < TimeSpan.FromSeconds(1) || options.ChannelLifetime > OneDay)
        {
            Fail(nameof(options.ChannelLifetime), "must be between 1 second and 1 day", options.ChannelLifetime);
        }

        if (double.IsNaN(options.LifetimeJitter) || options.LifetimeJitter < 0 || options.LifetimeJitter > 0.5)
        {
            Fail(nameof(options.LifetimeJitter), "must be between 0 and 0.5 (a fraction of ChannelLifetime)", options.LifetimeJitter);
        }

        if (options.CleanupInterval <= TimeSpan.Zero || options.CleanupInterval > options.ChannelLifetime)
        {
            Fail(nameof(options.CleanupInterval), $"must be greater than zero and at most ChannelLifetime ({options.ChannelLifetime})", options.CleanupInterval);
        }

        if (!Enum.IsDefined(options.LeaseMode))
        {
            Fail(nameof(options.LeaseMode), "must be Reuse or SingleUse", options.LeaseMode);
        }

        if (!Enum.IsDefined(options.IdleOrder))
        {
            Fail(nameof(options.IdleOrder), "must be MostRecentlyUsed or LeastRecentlyUsed", options.IdleOrder);
        }

        if (options.AcquireTimeout <= TimeSpan.Zero && options.AcquireTimeout != Timeout.InfiniteTimeSpan)
        {
            Fail(nameof(options.AcquireTimeout), "must be greater than zero, or Timeout.InfiniteTimeSpan to wait without limit", options.AcquireTimeout);
        }

        // No upper bound: opens are capped by the room under MaxChannels anyway, so lowering MaxChannels below the
        // default MaxConcurrentOpens must not be an error.
        if (options.MaxConcurrentOpens < 1)
        {
            Fail(nameof(options.MaxConcurrentOpens), "must be at least 1", options.MaxConcurrentOpens);
        }

        if (options.CloseTimeout <= TimeSpan.Zero || options.CloseTimeout > OneDay)
        {
            Fail(nameof(options.CloseTimeout), "must be greater than zero and at most 1 day", options.CloseTimeout);
        }

        if (options.DrainTimeout < TimeSpan.Zero || options.DrainTimeout > OneDay)
        {
            Fail(nameof(options.DrainTimeout), "must be between zero and 1 day", options.DrainTimeout);
        }

        if (options.Resilience is null)
        {
            Fail(nameof(options.Resilience), "must not be null", "null");
        }
        else if (options.OpenPipeline is null)
        {
            // The numbers below only shape the default pipeline; a custom OpenPipeline replaces them.
            ValidateResilience(options.Resilience, Fail);
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }

    private static void ValidateResilience(OpenResilienceOptions resilience, Action<string, string, object> fail)
    {
        const string Section = nameof(ChannelPoolOptions.Resilience) + ".";
        var minTimeout = TimeSpan.FromMilliseconds(10);
        var minBreakerWindow = TimeSpan.FromMilliseconds(500);

        if (resilience.AttemptTimeout <= minTimeout || resilience.AttemptTimeout >= OneDay)
        {
            fail(Section + nameof(resilience.AttemptTimeout), "must be more than 10 milliseconds and less than 1 day", resilience.AttemptTimeout);
        }

        if (resilience.TotalTimeout <= minTimeout || resilience.TotalTimeout >= OneDay)
        {
            fail(Section + nameof(resilience.TotalTimeout), "must be more than 10 milliseconds and less than 1 day", resilience.TotalTimeout);
        }
        else if (resilience.TotalTimeout < resilience.AttemptTimeout)
        {
            fail(Section + nameof(resilience.TotalTimeout), $"must be at least AttemptTimeout ({resilience.AttemptTimeout})", resilience.TotalTimeout);
        }

        if (resilience.MaxRetryAttempts < 0 || resilience.MaxRetryAttempts > 100)
        {
            fail(Section + nameof(resilience.MaxRetryAttempts), "must be between 0 and 100", resilience.MaxRetryAttempts);
        }

        if (resilience.RetryBaseDelay < TimeSpan.Zero || resilience.RetryBaseDelay > OneDay)
        {
            fail(Section + nameof(resilience.RetryBaseDelay), "must be between zero and 1 day", resilience.RetryBaseDelay);
        }

        if (double.IsNaN(resilience.BreakerFailureRatio) || resilience.BreakerFailureRatio <= 0 || resilience.BreakerFailureRatio > 1)
        {
            fail(Section + nameof(resilience.BreakerFailureRatio), "must be more than 0 and at most 1", resilience.BreakerFailureRatio);
        }

        if (resilience.BreakerMinimumThroughput < 2)
        {
            fail(Section + nameof(resilience.BreakerMinimumThroughput), "must be at least 2", resilience.BreakerMinimumThroughput);
        }

        if (resilience.BreakerSamplingDuration < minBreakerWindow || resilience.BreakerSamplingDuration > OneDay)
        {
            fail(Section + nameof(resilience.BreakerSamplingDuration), "must be between 0.5 seconds and 1 day", resilience.BreakerSamplingDuration);
        }

        if (resilience.BreakerBreakDuration < minBreakerWindow || resilience.BreakerBreakDuration > OneDay)
        {
            fail(Section + nameof(resilience.BreakerBreakDuration), "must be between 0.5 seconds and 1 day", resilience.BreakerBreakDuration);
        }
    }
}
