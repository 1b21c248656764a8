using Microsoft.Extensions.Options;

namespace ChannelPool.Hosting;

/// <summary>Checks <see cref="ChannelPoolStartupOptions"/>; the rule that needs the pool size is checked when the host starts.</summary>
internal sealed class ChannelPoolStartupOptionsValidator : IValidateOptions<ChannelPoolStartupOptions>
{
    public ValidateOptionsResult Validate(string? name, ChannelPoolStartupOptions options)
    {
        var failures = new List<string>();
        if (options.WaitForReadyChannels < 0)
        {
            failures.Add($"Channel pool '{name}': Startup.WaitForReadyChannels must be at least 0; it was {options.WaitForReadyChannels}.");
        }

        if (options.ReadyTimeout <= TimeSpan.Zero && options.ReadyTimeout != Timeout.InfiniteTimeSpan)
        {
            failures.Add($"Channel pool '{name}': Startup.ReadyTimeout must be greater than zero, or Timeout.InfiniteTimeSpan; it was {options.ReadyTimeout}.");
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
