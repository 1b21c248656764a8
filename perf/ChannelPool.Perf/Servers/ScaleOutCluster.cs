using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using ChannelPool.PollingDuplex;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Yarp.ReverseProxy.Configuration;
using Yarp.ReverseProxy.LoadBalancing;

namespace ChannelPool.Perf.Servers;

/// <summary>
/// The pub/sub service on N in-process Kestrel nodes on 127.0.0.1: in memory (one node), or on a shared Redis, behind
/// a YARP reverse proxy (round-robin, no affinity) when there is more than one.
/// </summary>
internal sealed class ScaleOutCluster : IAsyncDisposable
{
    private readonly List<WebApplication> _apps;

    private ScaleOutCluster(List<WebApplication> apps, Uri pubSub)
    {
        _apps = apps;
        PubSub = pubSub;
    }

    /// <summary>Gets the pub/sub endpoint clients use (the balancer's, with more than one node).</summary>
    public Uri PubSub { get; }

    public static async Task<ScaleOutCluster> StartAsync(int nodes, string? redis, Action<PollingDuplexOptions>? configure = null)
    {
        var apps = new List<WebApplication>();
        for (var i = 0; i < nodes; i++)
        {
            var builder = Builder();
            if (redis is not null)
            {
                builder.Services.AddPollingDuplexRedis(o => o.Configuration = redis);
            }

            var app = builder.Build();
            if (redis is null)
            {
                app.MapPollingDuplexPubSub("/pubsub", configure);
            }
            else
            {
                app.MapPollingDuplexPubSubOnRedis("/pubsub", configure);
            }

            await app.StartAsync();
            apps.Add(app);
        }

        if (nodes == 1)
        {
            return new ScaleOutCluster(apps, new Uri(Address(apps[0]) + "pubsub"));
        }

        var proxy = Builder();
        proxy.Services.AddReverseProxy().LoadFromMemory(
            [new RouteConfig { RouteId = "all", ClusterId = "nodes", Match = new RouteMatch { Path = "{**rest}" } }],
            [new ClusterConfig { ClusterId = "nodes", LoadBalancingPolicy = LoadBalancingPolicies.RoundRobin, Destinations = apps.Select((a, i) => (a, i)).ToDictionary(x => $"node{x.i}", x => new DestinationConfig { Address = Address(x.a) }) }]);
        var balancer = proxy.Build();
        balancer.MapReverseProxy();
        await balancer.StartAsync();
        apps.Insert(0, balancer);
        return new ScaleOutCluster(apps, new Uri(Address(balancer) + "pubsub"));
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var app in _apps)
        {
            await app.StopAsync();
            await app.DisposeAsync();
        }
    }

    private static WebApplicationBuilder Builder()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.UseKestrel(k => k.Listen(IPAddress.Loopback, 0));
        return builder;
    }

    private static string Address(WebApplication app) =>
        app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single().TrimEnd('/') + "/";
}

/// <summary>A redis-server on 127.0.0.1 on a free port, without persistence, for one perf run.</summary>
internal sealed class RedisProcess : IAsyncDisposable
{
    private readonly Process _process;

    private RedisProcess(Process process, int port)
    {
        _process = process;
        Configuration = $"127.0.0.1:{port}";
    }

    public string Configuration { get; }

    public static async Task<RedisProcess> StartAsync()
    {
        if (!File.Exists("/usr/bin/redis-server"))
        {
            throw new InvalidOperationException("The redis command needs redis-server: apt-get install redis-server.");
        }

        int port;
        using (var listener = new TcpListener(IPAddress.Loopback, 0))
        {
            listener.Start();
            port = ((IPEndPoint)listener.LocalEndpoint).Port;
        }

        var start = new ProcessStartInfo("/usr/bin/redis-server") { RedirectStandardOutput = true };
        foreach (var arg in new[] { "--port", port.ToString(System.Globalization.CultureInfo.InvariantCulture), "--bind", "127.0.0.1", "--save", string.Empty, "--appendonly", "no" })
        {
            start.ArgumentList.Add(arg);
        }

        var process = Process.Start(start)!;
        process.OutputDataReceived += (_, _) => { };
        process.BeginOutputReadLine();
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                using var client = new TcpClient();
                await client.ConnectAsync(IPAddress.Loopback, port);
                break;
            }
            catch (SocketException) when (attempt < 100)
            {
                await Task.Delay(50);
            }
        }

        return new RedisProcess(process, port);
    }

    public async ValueTask DisposeAsync()
    {
        _process.Kill();
        await _process.WaitForExitAsync();
        _process.Dispose();
    }
}
