using ChannelPool.Perf.Stats;

namespace ChannelPool.Perf.Scenarios.Redis;

/// <summary>The redis scenario's settings.</summary>
internal sealed record RedisSettings
{
    /// <summary>How many publishes each command count sends, one at a time, before the subscribers' polls take them all.</summary>
    public const int PublishesPerCount = 20;

    /// <summary>Gets the broadcast's subscribers M.</summary>
    public int Clients { get; init; } = 1000;

    /// <summary>Gets the broadcast's bursts K, one a second.</summary>
    public int Bursts { get; init; } = 10;

    /// <summary>Gets the collaboration's topics T (the original's first row: 100).</summary>
    public int Rooms { get; init; } = 100;

    /// <summary>Gets the collaboration's clients per topic N (the original's first row: 5).</summary>
    public int Members { get; init; } = 5;

    /// <summary>Gets the collaboration's rounds, D = 1 s apart; in each, one member of every topic publishes, in turn.</summary>
    public int Rounds { get; init; } = 10;

    /// <summary>Gets the subscriber counts N the Redis commands are counted at.</summary>
    public IReadOnlyList<int> SubscriberCounts { get; init; } = [1, 10, 100, 1000];
}

/// <summary>One store and node count: its broadcast and its collaboration.</summary>
/// <param name="Store">The store and the nodes, for example <c>Redis, 3 nodes + YARP</c>.</param>
/// <param name="Clients">The broadcast's M.</param>
/// <param name="Bursts">The broadcast's K.</param>
/// <param name="BurstsOnTime">Bursts that reached every client within 1 s.</param>
/// <param name="WorstBurstMs">The slowest burst, publish to last receipt; infinite when one never reached every client.</param>
/// <param name="Delivery">The broadcast's publish-to-receipt latency.</param>
/// <param name="Collaboration">The collaboration's publish-to-receipt latency.</param>
/// <param name="ProcessCpuMicrosPerDelivery">This whole process's CPU (clients, nodes and balancer) during the broadcast, per delivered notification.</param>
internal sealed record RedisStoreResult(
    string Store, int Clients, int Bursts, int BurstsOnTime, double WorstBurstMs, LatencySummary Delivery, LatencySummary Collaboration, double ProcessCpuMicrosPerDelivery);

/// <summary>What Redis ran for one publish to N subscribers, and for delivering it (commands include those scripts run).</summary>
internal sealed record RedisCommandCount(
    int Subscribers,
    double RoundTripsPerPublish,
    double CommandsPerPublish,
    double CommandsPerPublishPerSubscriber,
    double RedisCpuMicrosPerPublish,
    double RoundTripsPerFrame,
    double CommandsPerFrame,
    double RedisCpuMicrosPerFrame);

/// <summary>The redis scenario's results.</summary>
/// <param name="Stores">One per store and node count.</param>
/// <param name="Commands">One per subscriber count.</param>
internal sealed record RedisResults(IReadOnlyList<RedisStoreResult> Stores, IReadOnlyList<RedisCommandCount> Commands);
