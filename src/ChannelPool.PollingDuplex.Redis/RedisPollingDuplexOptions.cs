namespace ChannelPool.PollingDuplex.Redis;

/// <summary>Where and how the polling duplex Redis store keeps its sessions and topics. Validated when the host starts.</summary>
public sealed class RedisPollingDuplexOptions
{
    /// <summary>
    /// Gets or sets the StackExchange.Redis configuration string of the Redis that every node shares, for example
    /// <c>redis.internal:6379,password=...</c>. Required.
    /// </summary>
    public string Configuration { get; set; } = string.Empty;

    /// <summary>
    /// Gets or sets the prefix of every key and channel, so several applications (or a new set of nodes with other
    /// options) can share one Redis. Each endpoint's keys start with <c>KeyPrefix:pattern</c> and hash by session, topic
    /// and user, so a Redis Cluster spreads one endpoint over its shards. No braces: the store makes its own hash tags.
    /// Defaults to <c>channelpool:duplex</c>.
    /// </summary>
    public string KeyPrefix { get; set; } = "channelpool:duplex";

    /// <summary>
    /// Gets or sets how long one Redis operation may take before the request fails with <c>503 store-unavailable</c>.
    /// Also the connect timeout. Defaults to 2 seconds: a client retries a 503, so failing fast costs less than waiting.
    /// </summary>
    public TimeSpan OperationTimeout { get; set; } = TimeSpan.FromSeconds(2);
}
