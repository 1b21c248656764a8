using System.Globalization;
using Microsoft.Extensions.Options;
using Polly.Retry;

namespace ChannelPool;

/// <summary>
/// Checks <see cref="ChannelPoolOptions"/>: every range, and the rules that relate two options. A pool runs it when it
/// is created and reconfigured; register it as an <see cref="IValidateOptions{TOptions}"/> (ChannelPool.Hosting does)
/// so that a bad configuration stops start-up instead.
/// </summary>
/// <remarks>
/// Each failure names the pool, the option, the rule and the value that broke it. Single-field ranges come from data
/// annotations (ours, and Polly's on its strategy options) through the <c>[OptionsValidator]</c> source generator; the
/// rules that relate two fields are written here. Options left <see langword="null"/> follow their defaults, which
/// always pass.
/// </remarks>
public sealed class ChannelPoolOptionsValidator : IValidateOptions<ChannelPoolOptions>
{
    private static readonly TimeSpan MaxLeakDetectionThreshold = TimeSpan.FromDays(1);

    /// <summary>Checks <paramref name="options"/>.</summary>
    /// <param name="name">The options' name; the pool's name when <see cref="ChannelPoolOptions.Name"/> is not set.</param>
    /// <param name="options">The options to check.</param>
    /// <returns>Success, or a failure per broken rule.</returns>
    public ValidateOptionsResult Validate(string? name, ChannelPoolOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var failures = new OptionsFailures(options.Name ?? name);
        failures.AddAnnotations(new ChannelPoolOptionsAnnotations().Validate(null, options), options);

        if (options.Name is not null && string.IsNullOrWhiteSpace(options.Name))
        {
            failures.Add(nameof(options.Name), "must not be empty or white space when it is set", $"'{options.Name}'");
        }

        // PoolSize and RefillThreshold have no annotation: each range ends at another option.
        if (options.PoolSize < 1 || options.PoolSize > Math.Max(1, options.MaxChannels))
        {
            failures.Add(nameof(options.PoolSize), $"must be between 1 and MaxChannels ({options.MaxChannels})", options.PoolSize);
        }

        if (options.RefillThreshold is { } refill && (refill < 0 || refill >= Math.Max(1, options.PoolSize)))
        {
            failures.Add(nameof(options.RefillThreshold), $"must be at least 0 and less than PoolSize ({options.PoolSize})", refill);
        }

        if (options.CleanupInterval is { } cleanup && (cleanup <= TimeSpan.Zero || cleanup > options.ChannelLifetime))
        {
            failures.Add(nameof(options.CleanupInterval), $"must be greater than zero and at most ChannelLifetime ({options.ChannelLifetime})", cleanup);
        }

        if (options.IdleTimeout is { } idle && idle != Timeout.InfiniteTimeSpan && (idle <= TimeSpan.Zero || idle > options.ChannelLifetime))
        {
            failures.Add(
                nameof(options.IdleTimeout),
                $"must be greater than zero and at most ChannelLifetime ({options.ChannelLifetime}), or Timeout.InfiniteTimeSpan to keep idle channels until their lifetime ends",
                idle);
        }

        if (options.LeakDetectionThreshold is { } leak && leak != Timeout.InfiniteTimeSpan && (leak <= TimeSpan.Zero || leak > MaxLeakDetectionThreshold))
        {
            failures.Add(
                nameof(options.LeakDetectionThreshold),
                $"must be greater than zero and at most {MaxLeakDetectionThreshold}, or Timeout.InfiniteTimeSpan (\"-00:00:00.001\" in configuration) to turn leak detection off",
                leak);
        }

        if (options.FactoryLifetime is { } factoryLifetime && factoryLifetime < TimeSpan.FromSeconds(1))
        {
            failures.Add(nameof(options.FactoryLifetime), "must be at least 1 second, or null never to renew the channel factory", factoryLifetime);
        }

        // Not annotations: the binder and casts can produce values outside an enum, and the message names the choices.
        if (options.LeaseMode is { } mode && !Enum.IsDefined(mode))
        {
            failures.Add(nameof(options.LeaseMode), "must be Reuse or SingleUse", mode);
        }

        if (!Enum.IsDefined(options.AcquireWhilePaused))
        {
            failures.Add(nameof(options.AcquireWhilePaused), "must be Fail or Wait", options.AcquireWhilePaused);
        }

        if (!Enum.IsDefined(options.IdleOrder))
        {
            failures.Add(nameof(options.IdleOrder), "must be MostRecentlyUsed or LeastRecentlyUsed", options.IdleOrder);
        }

        if (options.MaxLeasesPerChannel > 1 && options.LeaseMode == LeaseMode.SingleUse)
        {
            failures.Add(
                nameof(options.MaxLeasesPerChannel),
                "must be 1 when LeaseMode is SingleUse, because a single-use channel is closed after its one lease",
                options.MaxLeasesPerChannel);
        }

        if (!Enum.IsDefined(options.LeaseSharing))
        {
            failures.Add(nameof(options.LeaseSharing), "must be Always or Adaptive", options.LeaseSharing);
        }

        // Not an annotation: the infinite value is negative.
        if (options.AcquireTimeout <= TimeSpan.Zero && options.AcquireTimeout != Timeout.InfiniteTimeSpan)
        {
            failures.Add(nameof(options.AcquireTimeout), "must be greater than zero, or Timeout.InfiniteTimeSpan to wait without limit", options.AcquireTimeout);
        }

        if (options.IdleTarget is { } idleTarget)
        {
            ValidateIdleTarget(idleTarget, options.MaxChannels, failures);
        }

        // The resilience options only shape the default pipeline; a custom OpenPipeline replaces them.
        if (options.Resilience is { } resilience && options.OpenPipeline is null)
        {
            ValidateResilience(resilience, failures);
        }

        return failures.Result;
    }

    private static void ValidateIdleTarget(IdleTargetOptions idleTarget, int maxChannels, OptionsFailures failures)
    {
        const string Section = nameof(ChannelPoolOptions.IdleTarget) + ".";
        failures.AddAnnotations(new IdleTargetOptionsAnnotations().Validate(null, idleTarget), idleTarget, Section);
        if (!Enum.IsDefined(idleTarget.Mode))
        {
            failures.Add(Section + nameof(idleTarget.Mode), "must be Fixed or Adaptive", idleTarget.Mode);
        }

        // Only an adaptive target uses the minimum; a fixed pool of one channel keeps the default of two without error.
        if (idleTarget.Mode == IdleTargetMode.Adaptive && idleTarget.Minimum > maxChannels)
        {
            failures.Add(Section + nameof(idleTarget.Minimum), $"must be at most MaxChannels ({maxChannels})", idleTarget.Minimum);
        }
    }

    private static void ValidateResilience(OpenResilienceOptions resilience, OptionsFailures failures)
    {
        const string Section = nameof(ChannelPoolOptions.Resilience) + ".";
        failures.AddAnnotations(new OpenResilienceOptionsAnnotations().Validate(null, resilience), resilience, Section);
        // 0 retries is the pool's switch for leaving the retry out, below Polly's own minimum of 1.
        if (resilience.Retry is { MaxRetryAttempts: not 0 } retry)
        {
            failures.AddAnnotations(new RetryAnnotations().Validate(null, retry), retry, Section + nameof(resilience.Retry) + ".");
        }

        if (resilience is { TotalTimeout: { } total, AttemptTimeout: { } attempt } && total.Timeout < attempt.Timeout)
        {
            failures.Add(Section + "TotalTimeout.Timeout", $"must be at least {Section}AttemptTimeout.Timeout ({attempt.Timeout})", total.Timeout);
        }
    }
}

/// <summary>Collects failures, each prefixed with the pool's name, in the form the pool's exceptions use.</summary>
/// <param name="poolName">The pool the options belong to; left out of the messages when empty.</param>
internal sealed class OptionsFailures(string? poolName)
{
    private const string FieldPrefix = "The field ";
    private readonly List<string> _failures = [];
    private readonly string _prefix = string.IsNullOrEmpty(poolName) ? string.Empty : $"Channel pool '{poolName}': ";

    public ValidateOptionsResult Result => _failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(_failures);

    public void Add(string option, string rule, object value) =>
        _failures.Add(string.Create(CultureInfo.InvariantCulture, $"{_prefix}{option} {rule}; it was {value}."));

    /// <summary>
    /// Adds the failures of a generated validator, rewritten from "Member: The field Type.Path must be …." to
    /// "Channel pool 'name': Section.Path must be …; it was value." so that they read like the hand-written ones.
    /// </summary>
    /// <param name="result">What the generated validator returned; it was called with no name.</param>
    /// <param name="validated">The object it validated, to read the value that broke the rule.</param>
    /// <param name="section">Where that object sits in the pool's options, for example <c>Resilience.Retry.</c>.</param>
    public void AddAnnotations(ValidateOptionsResult result, object validated, string section = "")
    {
        if (!result.Failed || result.Failures is null)
        {
            return;
        }

        var typePrefix = validated.GetType().Name + ".";
        foreach (var failure in result.Failures)
        {
            // The generated message starts with the member name and a colon; the rest names the type and the path.
            var message = failure[(failure.IndexOf(": ", StringComparison.Ordinal) + 2)..].TrimEnd('.');
            if (message.StartsWith(FieldPrefix + typePrefix, StringComparison.Ordinal))
            {
                var rest = message[(FieldPrefix.Length + typePrefix.Length)..];
                var space = rest.IndexOf(' ', StringComparison.Ordinal);
                var path = rest[..space];
                Add(section + path, rest[(space + 1)..], ValueAt(validated, path));
            }
            else
            {
                _failures.Add($"{_prefix}{message.Replace(typePrefix, section, StringComparison.Ordinal)}.");
            }
        }
    }

    private static object ValueAt(object root, string path)
    {
        object? value = root;
        foreach (var member in path.Split('.'))
        {
            value = value?.GetType().GetProperty(member)?.GetValue(value);
        }

        return value ?? "null";
    }
}

[OptionsValidator]
internal sealed partial class ChannelPoolOptionsAnnotations : IValidateOptions<ChannelPoolOptions>;

[OptionsValidator]
internal sealed partial class IdleTargetOptionsAnnotations : IValidateOptions<IdleTargetOptions>;

[OptionsValidator]
internal sealed partial class OpenResilienceOptionsAnnotations : IValidateOptions<OpenResilienceOptions>;

[OptionsValidator]
internal sealed partial class RetryAnnotations : IValidateOptions<RetryStrategyOptions>;
