using System.Collections.Concurrent;
using System.Net;
using ChannelPool.PollingDuplex;
using ChannelPool.Testing.Redis;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Yarp.ReverseProxy.Configuration;
using Yarp.ReverseProxy.LoadBalancing;

namespace ChannelPool.Testing.PollingDuplex;

/// <summary>
/// Test infrastructure, not product: the pub/sub service on real Kestrel nodes on 127.0.0.1, in this process. Either
/// one node with the in-memory store, or any number sharing one Redis; more than one node sit behind a YARP reverse
/// proxy, also in this process, that spreads requests round-robin with no session affinity.
/// </summary>
public sealed class DuplexCluster : IAsyncDisposable
{
    private const string PubSubPath = "pubsub";

    private readonly WebApplication? _balancer;
    private readonly RedisServerProcess? _ownedRedis;

    private DuplexCluster(List<DuplexNode> nodes, WebApplication? balancer, RedisServerProcess? ownedRedis, ConcurrentQueue<(string, int, string)>? served)
    {
        Nodes = nodes;
        _balancer = balancer;
        _ownedRedis = ownedRedis;
        Served = served ?? new();
        PubSub = balancer is null ? nodes[0].PubSub : new Uri(Listening(balancer), PubSubPath);
    }

    /// <summary>Gets the nodes, in the order they started.</summary>
    public IReadOnlyList<DuplexNode> Nodes { get; }

    /// <summary>Gets the pub/sub endpoint clients use: the balancer's, or the only node's.</summary>
    public Uri PubSub { get; }

    /// <summary>Gets another endpoint every node maps (<see cref="DuplexClusterOptions.MapNode"/>), as clients reach it: through the balancer, or on the only node.</summary>
    /// <param name="path">The endpoint's path, for example <c>duplex</c>.</param>
    /// <returns>Its address.</returns>
    public Uri At(string path) => new(new Uri(PubSub, "/"), path.TrimStart('/'));

    /// <summary>
    /// Gets, in arrival order over all nodes, the node that served each request of a session (by session id). Empty
    /// unless the cluster was started with <see cref="DuplexClusterOptions.TrackRequests"/>.
    /// </summary>
    public ConcurrentQueue<(string SessionId, int Node, string Method)> Served { get; }

    /// <summary>
    /// Starts <paramref name="nodes"/> nodes on Redis, behind the balancer when more than one, recording what each
    /// serves: the shape the scale-out tests use.
    /// </summary>
    /// <param name="nodes">How many nodes.</param>
    /// <param name="configure">Configures the pub/sub endpoint on every node.</param>
    /// <param name="redis">
    /// The configuration of the Redis to share (a server or a Redis Cluster), which the caller stops; <see langword="null"/>
    /// starts a server that the cluster stops.
    /// </param>
    /// <returns>The running cluster.</returns>
    public static async Task<DuplexCluster> StartAsync(int nodes = 3, Action<PollingDuplexOptions>? configure = null, string? redis = null)
    {
        var owned = redis is null ? await RedisServerProcess.StartAsync() : null;
        try
        {
            var options = new DuplexClusterOptions { Nodes = nodes, Redis = redis ?? owned!.Configuration, Configure = configure, TrackRequests = true };
            return await StartAsync(options, owned);
        }
        catch
        {
            if (owned is not null)
            {
                await owned.DisposeAsync();
            }

            throw;
        }
    }

    /// <summary>Starts a cluster as <paramref name="options"/> describe.</summary>
    /// <param name="options">The nodes, the store and what to record.</param>
    /// <returns>The running cluster.</returns>
    /// <exception cref="ArgumentException">More than one node without a Redis to share.</exception>
    public static Task<DuplexCluster> StartAsync(DuplexClusterOptions options) => StartAsync(options, ownedRedis: null);

    /// <summary>An HTTP/1.1 client with no connection limit and no timeout, optionally through a fault-injecting handler.</summary>
    /// <param name="wrap">Wraps the socket handler, for example in one that drops requests or responses.</param>
    /// <returns>A new client.</returns>
    public static HttpClient CreateHttpClient(Func<HttpMessageHandler, HttpMessageHandler>? wrap = null)
    {
        HttpMessageHandler handler = new SocketsHttpHandler { MaxConnectionsPerServer = int.MaxValue };
        if (wrap is not null)
        {
            handler = wrap(handler);
        }

        return new HttpClient(handler) { Timeout = Timeout.InfiniteTimeSpan };
    }

    /// <summary>Stops the balancer, then every node, then the Redis the cluster started, if it started one.</summary>
    /// <returns>A task that completes when everything has stopped.</returns>
    public async ValueTask DisposeAsync()
    {
        if (_balancer is not null)
        {
            await _balancer.StopAsync();
            await _balancer.DisposeAsync();
        }

        foreach (var node in Nodes)
        {
            await node.DisposeAsync();
        }

        if (_ownedRedis is not null)
        {
            await _ownedRedis.DisposeAsync();
        }
    }

    internal static WebApplicationBuilder LoopbackBuilder()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.UseKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0));
        return builder;
    }

    internal static Uri Listening(WebApplication app) =>
        new(app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single().TrimEnd('/') + "/");

    private static async Task<DuplexCluster> StartAsync(DuplexClusterOptions options, RedisServerProcess? ownedRedis)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentOutOfRangeException.ThrowIfLessThan(options.Nodes, 1);
        if (options.Nodes > 1 && options.Redis is null)
        {
            throw new ArgumentException($"{options.Nodes} nodes need a Redis to share; the in-memory store serves one node only.", nameof(options));
        }

        var served = options.TrackRequests ? new ConcurrentQueue<(string, int, string)>() : null;
        var nodes = new List<DuplexNode>();
        try
        {
            for (var i = 0; i < options.Nodes; i++)
            {
                nodes.Add(await DuplexNode.StartAsync(i, PubSubPath, options, served));
            }

            var balancer = nodes.Count > 1 ? await StartBalancerAsync([.. nodes.Where(n => options.BalancedNodes?.Contains(n.Index) ?? true)]) : null;
            return new DuplexCluster(nodes, balancer, ownedRedis, served);
        }
        catch
        {
            foreach (var node in nodes)
            {
                await node.DisposeAsync();
            }

            throw;
        }
    }

    private static async Task<WebApplication> StartBalancerAsync(List<DuplexNode> nodes)
    {
        var builder = LoopbackBuilder();
        builder.Services.AddReverseProxy().LoadFromMemory(
            [new RouteConfig { RouteId = "all", ClusterId = "nodes", Match = new RouteMatch { Path = "{**rest}" } }],
            [
                new ClusterConfig
                {
                    ClusterId = "nodes",
                    LoadBalancingPolicy = LoadBalancingPolicies.RoundRobin,
                    Destinations = nodes.ToDictionary(n => $"node{n.Index}", n => new DestinationConfig { Address = n.Address.ToString() }),
                },
            ]);
        var balancer = builder.Build();
        balancer.MapReverseProxy();
        await balancer.StartAsync();
        return balancer;
    }
}
