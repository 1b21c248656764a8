using Microsoft.Extensions.Options;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>Checks <see cref="RedisPollingDuplexOptions"/> when the host starts, naming every broken rule.</summary>
internal sealed class RedisPollingDuplexOptionsValidator : IValidateOptions<RedisPollingDuplexOptions>
{
    public ValidateOptionsResult Validate(string? name, RedisPollingDuplexOptions options)
    {
        var failures = new List<string>();
        if (string.IsNullOrWhiteSpace(options.Configuration))
        {
            failures.Add("Configuration is required: the StackExchange.Redis configuration string of the shared Redis, for example \"redis:6379\".");
        }
        else
        {
            try
            {
                if (ConfigurationOptions.Parse(options.Configuration).EndPoints.Count == 0)
                {
                    failures.Add($"Configuration '{options.Configuration}' names no Redis endpoint (host:port).");
                }
            }
            catch (ArgumentException ex)
            {
                failures.Add($"Configuration '{options.Configuration}' is not a StackExchange.Redis configuration string: {ex.Message}");
            }
        }

        if (string.IsNullOrWhiteSpace(options.KeyPrefix) || options.KeyPrefix.AsSpan().IndexOfAny('{', '}') >= 0)
        {
            failures.Add($"KeyPrefix '{options.KeyPrefix}' must be non-empty and free of '{{' and '}}', which the store uses as the Redis Cluster hash tag.");
        }

        if (options.OperationTimeout < TimeSpan.FromMilliseconds(100) || options.OperationTimeout > TimeSpan.FromMinutes(1))
        {
            failures.Add($"OperationTimeout must be from 100 ms to 1 minute; it is {options.OperationTimeout}.");
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
