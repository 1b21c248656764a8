using System.Globalization;
using Microsoft.Extensions.Options;

namespace ChannelPool.Hosting;

/// <summary>
/// Checks <see cref="ChannelPoolStartupOptions"/>, each failure naming the pool. The rule that needs the pool size is
/// checked when the host starts.
/// </summary>
internal sealed class ChannelPoolStartupOptionsValidator : IValidateOptions<ChannelPoolStartupOptions>
{
    public ValidateOptionsResult Validate(string? name, ChannelPoolStartupOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        List<string>? failures = null;
        if (options.WaitForReadyChannels < 0)
        {
            Fail(ref failures, name, nameof(options.WaitForReadyChannels), "must be at least 0", options.WaitForReadyChannels);
        }

        if (options.ReadyTimeout <= TimeSpan.Zero && options.ReadyTimeout != Timeout.InfiniteTimeSpan)
        {
            Fail(ref failures, name, nameof(options.ReadyTimeout), "must be greater than zero, or Timeout.InfiniteTimeSpan", options.ReadyTimeout);
        }

        return failures is null ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }

    // Worded as the pool's own option failures are: "Channel pool 'name': Option rule; it was value."
    private static void Fail(ref List<string>? failures, string? poolName, string option, string rule, object value) =>
        (failures ??= []).Add(string.Create(
            CultureInfo.InvariantCulture, $"Channel pool '{poolName}': Startup.{option} {rule}; it was {value}."));
}
