using Microsoft.Extensions.Options;

namespace ChannelPool.Hosting;

/// <summary>
/// Checks <see cref="ChannelPoolStartupOptions"/>: its data annotations through the generated validator, with each
/// failure naming the pool, and the timeout's infinite value by hand. The rule that needs the pool size is checked
/// when the host starts.
/// </summary>
internal sealed class ChannelPoolStartupOptionsValidator : IValidateOptions<ChannelPoolStartupOptions>
{
    public ValidateOptionsResult Validate(string? name, ChannelPoolStartupOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var failures = new OptionsFailures(name);
        failures.AddAnnotations(new ChannelPoolStartupOptionsAnnotations().Validate(null, options), options, "Startup.");
        if (options.ReadyTimeout <= TimeSpan.Zero && options.ReadyTimeout != Timeout.InfiniteTimeSpan)
        {
            failures.Add("Startup." + nameof(options.ReadyTimeout), "must be greater than zero, or Timeout.InfiniteTimeSpan", options.ReadyTimeout);
        }

        return failures.Result;
    }
}

[OptionsValidator]
internal sealed partial class ChannelPoolStartupOptionsAnnotations : IValidateOptions<ChannelPoolStartupOptions>;
