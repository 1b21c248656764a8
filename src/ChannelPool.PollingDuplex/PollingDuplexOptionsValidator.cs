using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// Checks <see cref="PollingDuplexOptions"/>: the ranges its data annotations declare (through the generated
/// <see cref="PollingDuplexOptionsRanges"/>), then the rules that tie one option to another. Each failure names the
/// endpoint, option, rule and value.
/// </summary>
/// <remarks>
/// The range messages are the library's own ("The field ... must be between ... and ..."): the generator's copy of
/// <c>RangeAttribute</c> (Microsoft.Extensions.Options.SourceGeneration 10.0.14) ignores <c>ErrorMessage</c>.
/// </remarks>
internal sealed class PollingDuplexOptionsValidator : IValidateOptions<PollingDuplexOptions>
{
    private static readonly PollingDuplexOptionsRanges Ranges = new();

    /// <inheritdoc />
    public ValidateOptionsResult Validate(string? name, PollingDuplexOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var failures = new List<string>();
        var prefix = string.IsNullOrEmpty(name) ? "Polling duplex: " : $"Polling duplex endpoint '{name}': ";
        void Fail(string option, string rule, object value) => failures.Add($"{prefix}{option} {rule}; it was {value}.");

        // Unnamed, so each range failure reads "The field PollingDuplexOptions.X must be ..." after our prefix.
        if (Ranges.Validate(name: null, options) is { Failed: true, Failures: { } rangeFailures })
        {
            foreach (var failure in rangeFailures)
            {
                // The builder writes "X: message"; X finds the value to quote.
                var separator = failure.IndexOf(": ", StringComparison.Ordinal);
                var option = separator < 0 ? string.Empty : failure[..separator];
                var message = separator < 0 ? failure : failure[(separator + 2)..];
                var value = typeof(PollingDuplexOptions).GetProperty(option)?.GetValue(options);
                failures.Add($"{prefix}{message.TrimEnd('.')}; it was {value}.");
            }
        }

        if (options.InactivityTimeout <= options.ServerPollTimeout + options.BatchWindow)
        {
            Fail(nameof(options.InactivityTimeout), $"must exceed ServerPollTimeout plus BatchWindow ({options.ServerPollTimeout + options.BatchWindow})", options.InactivityTimeout);
        }

        if (options.MaxPendingBytesPerSession < (long)options.MaxMessageSize + DuplexSession.HeldFrameOverhead)
        {
            Fail(nameof(options.MaxPendingBytesPerSession), $"must be at least MaxMessageSize plus {DuplexSession.HeldFrameOverhead} ({(long)options.MaxMessageSize + DuplexSession.HeldFrameOverhead}), or a largest message could never be queued", options.MaxPendingBytesPerSession);
        }

        if (options.MaxSendRequestSize < options.MaxMessageSize + DuplexWire.BinaryHeaderSize)
        {
            Fail(nameof(options.MaxSendRequestSize), $"must be at least MaxMessageSize plus a frame header ({options.MaxMessageSize + DuplexWire.BinaryHeaderSize})", options.MaxSendRequestSize);
        }

        if (options.BatchWindow < TimeSpan.Zero || options.BatchWindow >= options.ServerPollTimeout)
        {
            Fail(nameof(options.BatchWindow), $"must be at least zero and less than ServerPollTimeout ({options.ServerPollTimeout})", options.BatchWindow);
        }

        if (options.AwayGracePeriod <= TimeSpan.Zero)
        {
            Fail(nameof(options.AwayGracePeriod), "must be above zero (a page that reloads needs the time to come back)", options.AwayGracePeriod);
        }

        if (options.UserIdSelector is null)
        {
            Fail(nameof(options.UserIdSelector), "must turn a request's user into an id (PollingDuplexOptions.DefaultUserId is the default)", "null");
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}

/// <summary>The ranges declared by <see cref="PollingDuplexOptions"/>' data annotations, checked by generated code.</summary>
[OptionsValidator]
internal sealed partial class PollingDuplexOptionsRanges : IValidateOptions<PollingDuplexOptions>;
