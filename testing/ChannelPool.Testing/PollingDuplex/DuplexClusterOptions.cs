using ChannelPool.PollingDuplex;
using Microsoft.AspNetCore.Builder;

namespace ChannelPool.Testing.PollingDuplex;

/// <summary>How to start a <see cref="DuplexCluster"/>.</summary>
public sealed class DuplexClusterOptions
{
    /// <summary>Gets how many nodes to start; with more than one, a round-robin balancer sits in front. Default 1.</summary>
    public int Nodes { get; init; } = 1;

    /// <summary>
    /// Gets the StackExchange.Redis configuration of the Redis the nodes share (one server, or every master of a
    /// <see cref="Redis.RedisClusterProcess"/>); <see langword="null"/> for the in-memory store (one node).
    /// </summary>
    public string? Redis { get; init; }

    /// <summary>
    /// Gets the key prefix the nodes share. Each cluster gets one of its own unless told, so clusters started one after
    /// another on one Redis never see each other's sessions or options.
    /// </summary>
    public string KeyPrefix { get; init; } = "test-" + Guid.NewGuid().ToString("N")[..12];

    /// <summary>Gets the nodes (by index) the balancer spreads requests over; every node when null.</summary>
    public IReadOnlyList<int>? BalancedNodes { get; init; }

    /// <summary>Gets what adds services to a node (by its index) before it is built: a background publisher on one node, say.</summary>
    public Action<int, WebApplicationBuilder>? ConfigureNode { get; init; }

    /// <summary>Gets what maps more on a node (by its index) besides the pub/sub endpoint: a custom handler's endpoint, say.</summary>
    public Action<int, WebApplication>? MapNode { get; init; }

    /// <summary>Gets what configures the pub/sub endpoint on every node.</summary>
    public Action<PollingDuplexOptions>? Configure { get; init; }

    /// <summary>
    /// Gets whether every node records the session requests it serves (<see cref="DuplexCluster.Served"/>) and tracks
    /// those in flight, so <see cref="DuplexNode.KillAsync"/> can cut them. Off for measurements: it costs a little per
    /// request, and the record grows with every one.
    /// </summary>
    public bool TrackRequests { get; init; }
}
