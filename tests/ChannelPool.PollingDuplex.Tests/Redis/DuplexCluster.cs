using System.Collections.Concurrent;
using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Yarp.ReverseProxy.Configuration;
using Yarp.ReverseProxy.LoadBalancing;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// Nodes serving the pub/sub service from one Redis, each a real Kestrel on 127.0.0.1, behind a YARP reverse proxy in
/// the same process that spreads requests round-robin with no session affinity. Every node records which session
/// requests it served, so a test can show where each request landed.
/// </summary>
internal sealed class DuplexCluster : IAsyncDisposable
{
    private readonly WebApplication _balancer;
    private readonly bool _ownsRedis;

    private DuplexCluster(RedisServerProcess redis, bool ownsRedis, List<Node> nodes, WebApplication balancer, Uri address, ConcurrentQueue<(string, int, string)> served)
    {
        Served = served;
        Redis = redis;
        _ownsRedis = ownsRedis;
        Nodes = nodes;
        _balancer = balancer;
        Address = address;
    }

    public RedisServerProcess Redis { get; }

    public IReadOnlyList<Node> Nodes { get; }

    /// <summary>Gets the balancer's address.</summary>
    public Uri Address { get; }

    public Uri PubSub => new(Address, "pubsub");

    /// <summary>Gets, in arrival order over all nodes, the node that served each request of a session (by session id).</summary>
    public ConcurrentQueue<(string SessionId, int Node, string Method)> Served { get; }

    public static async Task<DuplexCluster> StartAsync(int nodes = 3, Action<PollingDuplexOptions>? configure = null, RedisServerProcess? redis = null)
    {
        var ownsRedis = redis is null;
        redis ??= await RedisServerProcess.StartAsync();
        var served = new ConcurrentQueue<(string, int, string)>();
        var started = new List<Node>();
        for (var i = 0; i < nodes; i++)
        {
            started.Add(await Node.StartAsync(i, redis.Configuration, configure, served));
        }

        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.UseKestrel(k => k.Listen(IPAddress.Loopback, 0));
        builder.Services.AddReverseProxy().LoadFromMemory(
            [new RouteConfig { RouteId = "all", ClusterId = "nodes", Match = new RouteMatch { Path = "{**rest}" } }],
            [
                new ClusterConfig
                {
                    ClusterId = "nodes",
                    LoadBalancingPolicy = LoadBalancingPolicies.RoundRobin,
                    Destinations = started.ToDictionary(n => $"node{n.Index}", n => new DestinationConfig { Address = n.Address.ToString() }),
                },
            ]);
        var balancer = builder.Build();
        balancer.MapReverseProxy();
        await balancer.StartAsync();
        return new DuplexCluster(redis, ownsRedis, started, balancer, Listening(balancer), served);
    }

    /// <summary>An HTTP/1.1 client for the balancer, optionally through a fault-injecting handler.</summary>
    public static HttpClient CreateHttpClient(Func<HttpMessageHandler, HttpMessageHandler>? wrap = null)
    {
        HttpMessageHandler handler = new SocketsHttpHandler { MaxConnectionsPerServer = int.MaxValue };
        if (wrap is not null)
        {
            handler = wrap(handler);
        }

        return new HttpClient(handler) { Timeout = Timeout.InfiniteTimeSpan };
    }

    public async ValueTask DisposeAsync()
    {
        await _balancer.StopAsync();
        await _balancer.DisposeAsync();
        foreach (var node in Nodes)
        {
            await node.DisposeAsync();
        }

        if (_ownsRedis)
        {
            await Redis.DisposeAsync();
        }
    }

    private static Uri Listening(WebApplication app) =>
        new(app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single().TrimEnd('/') + "/");

    /// <summary>One node: the pub/sub service on Redis, and a record of what it served.</summary>
    internal sealed class Node : IAsyncDisposable
    {
        private readonly WebApplication _app;
        private readonly ConcurrentDictionary<HttpContext, byte> _inFlight = new();
        private bool _stopped;

        private Node(int index, WebApplication app, Uri address)
        {
            Index = index;
            _app = app;
            Address = address;
        }

        public int Index { get; }

        public Uri Address { get; }

        public Uri PubSub => new(Address, "pubsub");

        public bool Killed { get; private set; }

        public static async Task<Node> StartAsync(int index, string redis, Action<PollingDuplexOptions>? configure, ConcurrentQueue<(string, int, string)> served)
        {
            var builder = WebApplication.CreateSlimBuilder();
            builder.Logging.ClearProviders();
            builder.WebHost.UseKestrel(k => k.Listen(IPAddress.Loopback, 0));
            builder.Services.AddPollingDuplexRedis(o => o.Configuration = redis);
            var app = builder.Build();
            Node? node = null;
            app.Use(async (context, next) =>
            {
                var self = node!;
                if (context.Request.Path.Value?.Split('/') is [_, _, "sessions", { Length: > 0 } id, ..])
                {
                    served.Enqueue((id, self.Index, context.Request.Method));
                }

                self._inFlight[context] = 0;
                try
                {
                    await next(context);
                }
                finally
                {
                    self._inFlight.TryRemove(context, out _);
                }
            });
            app.MapPollingDuplexPubSubOnRedis("/pubsub", configure);
            await app.StartAsync();
            node = new Node(index, app, Listening(app));
            return node;
        }

        /// <summary>Kills the node: every connection cut mid-request, no graceful shutdown, nothing it held handed over.</summary>
        public async Task KillAsync()
        {
            Killed = true;
            foreach (var context in _inFlight.Keys)
            {
                try
                {
                    context.Abort();
                }
                catch (ObjectDisposedException)
                {
                    // That request finished between the snapshot and the abort.
                }
            }

            using var now = new CancellationTokenSource();
            await now.CancelAsync();
            _stopped = true;
            await _app.StopAsync(now.Token);
        }

        public async ValueTask DisposeAsync()
        {
            if (!_stopped)
            {
                await _app.StopAsync();
            }

            await _app.DisposeAsync();
        }
    }
}
