using System.Collections.Concurrent;
using ChannelPool.PollingDuplex;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.Testing.PollingDuplex;

/// <summary>One node of a <see cref="DuplexCluster"/>: the pub/sub service on its own Kestrel.</summary>
public sealed class DuplexNode : IAsyncDisposable
{
    private readonly WebApplication _app;
    private readonly ConcurrentDictionary<HttpContext, byte> _inFlight = new();
    private bool _stopped;

    private DuplexNode(int index, WebApplication app, string pubSubPath)
    {
        Index = index;
        _app = app;
        Address = DuplexCluster.Listening(app);
        PubSub = new Uri(Address, pubSubPath);
    }

    /// <summary>Gets the node's position in <see cref="DuplexCluster.Nodes"/>.</summary>
    public int Index { get; }

    /// <summary>Gets the node's own address, bypassing the balancer.</summary>
    public Uri Address { get; }

    /// <summary>Gets the node's own pub/sub endpoint, bypassing the balancer.</summary>
    public Uri PubSub { get; }

    /// <summary>Gets the node's services, for what a test reaches on one node (a handler, a publisher).</summary>
    public IServiceProvider Services => _app.Services;

    /// <summary>Gets whether <see cref="KillAsync"/> ran.</summary>
    public bool Killed { get; private set; }

    /// <summary>
    /// Kills the node: every tracked request cut mid-way, no graceful shutdown, nothing it held handed over. Only a
    /// cluster started with <see cref="DuplexClusterOptions.TrackRequests"/> knows its requests in flight.
    /// </summary>
    /// <returns>A task that completes when the node has stopped.</returns>
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

        // An already cancelled token skips the graceful drain.
        using var now = new CancellationTokenSource();
        await now.CancelAsync();
        _stopped = true;
        await _app.StopAsync(now.Token);
    }

    /// <summary>Stops the node gracefully, unless it was killed.</summary>
    /// <returns>A task that completes when the node has stopped.</returns>
    public async ValueTask DisposeAsync()
    {
        if (!_stopped)
        {
            await _app.StopAsync();
        }

        await _app.DisposeAsync();
    }

    internal static async Task<DuplexNode> StartAsync(int index, string pubSubPath, DuplexClusterOptions options, ConcurrentQueue<(string, int, string)>? served)
    {
        var builder = DuplexCluster.LoopbackBuilder();
        if (options.Redis is { } redis)
        {
            builder.Services.AddPollingDuplexRedis(o =>
            {
                o.Configuration = redis;
                o.KeyPrefix = options.KeyPrefix;
            });
        }

        options.ConfigureNode?.Invoke(index, builder);
        var app = builder.Build();
        DuplexNode? node = null;
        if (served is not null)
        {
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
        }

        // The nodes serve anonymous clients on every topic, a choice made here once for every cluster test; a test that
        // gives a topic rule in Configure gets its rule instead.
        void Configure(PollingDuplexOptions o)
        {
            options.Configure?.Invoke(o);
            o.Topics.AllowAnonymous = o.Topics.Authorize is null && o.Topics.Policy is null;
        }

        if (options.Redis is null)
        {
            app.MapPollingDuplexPubSub("/" + pubSubPath, Configure);
        }
        else
        {
            app.MapPollingDuplexPubSubOnRedis("/" + pubSubPath, Configure);
        }

        options.MapNode?.Invoke(index, app);

        try
        {
            await app.StartAsync();
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }

        node = new DuplexNode(index, app, pubSubPath);
        return node;
    }
}
