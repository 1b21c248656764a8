using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex;

/// <summary>Checks every <see cref="PollingDuplexOptions"/> rule; each failure names the endpoint, option, rule and value.</summary>
internal sealed class PollingDuplexOptionsValidator : IValidateOptions<PollingDuplexOptions>
{
    /// <inheritdoc />
    public ValidateOptionsResult Validate(string? name, PollingDuplexOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var failures = new List<string>();
        var prefix = string.IsNullOrEmpty(name) ? "Polling duplex: " : $"Polling duplex endpoint '{name}': ";
        void Fail(string option, string rule, object value) => failures.Add($"{prefix}{option} {rule}; it was {value}.");

        if (options.ServerPollTimeout < TimeSpan.FromMilliseconds(10) || options.ServerPollTimeout > TimeSpan.FromMinutes(10))
        {
            Fail(nameof(options.ServerPollTimeout), "must be between 10 milliseconds and 10 minutes", options.ServerPollTimeout);
        }

        if (options.InactivityTimeout <= options.ServerPollTimeout + options.BatchWindow || options.InactivityTimeout > TimeSpan.FromDays(1))
        {
            Fail(nameof(options.InactivityTimeout), $"must exceed ServerPollTimeout plus BatchWindow ({options.ServerPollTimeout + options.BatchWindow}) and be at most 1 day", options.InactivityTimeout);
        }

        if (options.FirstPollTimeout < TimeSpan.FromMilliseconds(10) || options.FirstPollTimeout > TimeSpan.FromDays(1))
        {
            Fail(nameof(options.FirstPollTimeout), "must be between 10 milliseconds and 1 day", options.FirstPollTimeout);
        }

        if (options.MaxEndedSessionRecords < 0)
        {
            Fail(nameof(options.MaxEndedSessionRecords), "must be at least 0", options.MaxEndedSessionRecords);
        }

        if (options.MaxPendingSessions < 1)
        {
            Fail(nameof(options.MaxPendingSessions), "must be at least 1", options.MaxPendingSessions);
        }

        if (options.MaxConcurrentSessions < 1)
        {
            Fail(nameof(options.MaxConcurrentSessions), "must be at least 1", options.MaxConcurrentSessions);
        }

        if (options.MaxPendingMessagesPerSession < 1)
        {
            Fail(nameof(options.MaxPendingMessagesPerSession), "must be at least 1", options.MaxPendingMessagesPerSession);
        }

        if (options.MaxMessageSize < 1 || options.MaxMessageSize > 16 * 1024 * 1024)
        {
            Fail(nameof(options.MaxMessageSize), "must be between 1 byte and 16 MiB", options.MaxMessageSize);
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

        if (!Enum.IsDefined(options.OverflowPolicy))
        {
            Fail(nameof(options.OverflowPolicy), "must be FaultSession or GapMarker", options.OverflowPolicy);
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
