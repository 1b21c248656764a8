using ChannelPool.Perf.Scenarios.Broadcast;
using ChannelPool.Perf.Scenarios.Collaboration;

namespace ChannelPool.Perf.Scenarios.Redis;

/// <summary>Where the redis command's one node keeps its sessions.</summary>
internal enum RedisStoreKind
{
    /// <summary>In the node's memory: the floor the others are measured against.</summary>
    InMemory,

    /// <summary>In one redis-server.</summary>
    OneRedis,

    /// <summary>In a Redis Cluster of three masters.</summary>
    RedisCluster,
}

/// <summary>The redis scenario's settings.</summary>
internal sealed record RedisSettings
{
    /// <summary>How many publishes each command count sends, one at a time, before the subscribers' polls take them all.</summary>
    public const int PublishesPerCount = 20;

    /// <summary>Gets the stores the node runs on, one after the other.</summary>
    public IReadOnlyList<RedisStoreKind> Stores { get; init; } = [RedisStoreKind.InMemory, RedisStoreKind.OneRedis, RedisStoreKind.RedisCluster];

    /// <summary>Gets the broadcast search at P = 1 s, run on every store.</summary>
    public BroadcastSettings Broadcast { get; init; } = new() { Periods = [TimeSpan.FromSeconds(1)], Bursts = 10, ScoutBursts = 3 };

    /// <summary>Gets the collaboration rows (the original's seven, out of step, every D at a tenth), run on every store.</summary>
    public CollaborationSettings Collaboration { get; init; } = new() { Rows = CollaborationRow.Original7, Iterations = 3, DelayScale = 0.1 };

    /// <summary>Gets the subscriber counts N the Redis commands are counted at.</summary>
    public IReadOnlyList<int> SubscriberCounts { get; init; } = [10, 100, 1000, 10_000];
}

/// <summary>One store: its broadcast capacity and its collaboration rows.</summary>
/// <param name="Store">The store's name in the report.</param>
/// <param name="Broadcast">The broadcast search.</param>
/// <param name="Collaboration">One result per collaboration row.</param>
internal sealed record RedisStoreResult(string Store, BroadcastResult Broadcast, IReadOnlyList<CollaborationResult> Collaboration);

/// <summary>
/// What Redis ran, on one server, as a topic's subscribers N grow: per publish (none polling), per frame when each
/// subscriber's one poll takes all of them, and per delivery when every subscriber holds a poll and one publish wakes
/// them all (broadcast's shape). Round trips are the scripts the node ran; commands include those inside scripts.
/// </summary>
internal sealed record RedisCommandCount(
    int Subscribers,
    double RoundTripsPerPublish,
    double CommandsPerPublish,
    double RedisCpuMicrosPerPublish,
    double RoundTripsPerFrame,
    double CommandsPerFrame,
    double RedisCpuMicrosPerFrame,
    double RoundTripsPerHeldDelivery,
    double CommandsPerHeldDelivery,
    double RedisCpuMicrosPerHeldDelivery,
    double ProcessCpuMicrosPerHeldDelivery);

/// <summary>The redis scenario's results.</summary>
/// <param name="Stores">One per store.</param>
/// <param name="Commands">One per subscriber count.</param>
internal sealed record RedisResults(IReadOnlyList<RedisStoreResult> Stores, IReadOnlyList<RedisCommandCount> Commands);
