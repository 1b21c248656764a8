using Microsoft.Extensions.Options;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The node's one connection to the shared Redis (one server or a Redis Cluster: StackExchange.Redis routes each script
/// to the shard of its keys' slot), and the endpoints served through it. Each endpoint listens on its wake channel here.
/// </summary>
internal sealed class RedisDuplexConnection : IDisposable
{
    private readonly Lock _lock = new();
    private readonly List<RedisSessionStore> _stores = [];

    public RedisDuplexConnection(IOptions<RedisPollingDuplexOptions> options)
    {
        Options = options.Value;
        var configuration = ConfigurationOptions.Parse(Options.Configuration);
        var timeout = (int)Options.OperationTimeout.TotalMilliseconds;

        // Serve 503s while Redis is away rather than fail to start, and fail each command at once rather than queue it
        // behind a connection that may not come back within the client's patience.
        configuration.AbortOnConnectFail = false;
        configuration.BacklogPolicy = BacklogPolicy.FailFast;
        configuration.ConnectTimeout = timeout;
        configuration.AsyncTimeout = timeout;
        configuration.SyncTimeout = timeout;
        Multiplexer = ConnectionMultiplexer.Connect(configuration);
        Database = Multiplexer.GetDatabase();

        // Wakes published while a connection was down are lost: every endpoint looks again at what its polls wait on.
        Multiplexer.ConnectionRestored += (_, _) =>
        {
            foreach (var store in Stores)
            {
                store.OnReconnected();
            }
        };
    }

    public RedisPollingDuplexOptions Options { get; }

    public ConnectionMultiplexer Multiplexer { get; }

    public IDatabase Database { get; }

    /// <summary>Gets the endpoints served through this connection.</summary>
    public IReadOnlyList<RedisSessionStore> Stores
    {
        get
        {
            using (_lock.EnterScope())
            {
                return [.. _stores];
            }
        }
    }

    /// <summary>
    /// Serves an endpoint: its wake channel is subscribed now, and again by StackExchange.Redis after every reconnect.
    /// Returns the subscription, which completes once Redis confirmed it (or fails while Redis is away; it is sent
    /// when the connection comes up).
    /// </summary>
    public Task AttachAsync(RedisSessionStore store)
    {
        using (_lock.EnterScope())
        {
            if (_stores.Any(s => s.Keys.Endpoint == store.Keys.Endpoint))
            {
                throw new InvalidOperationException($"The endpoint '{store.Endpoint}' is mapped on Redis twice with the key prefix '{Options.KeyPrefix}'; map each pattern once.");
            }

            _stores.Add(store);
        }

        return Multiplexer.GetSubscriber().SubscribeAsync(store.Keys.WakeChannel, (_, message) => store.OnWake(message));
    }

    public void Detach(RedisSessionStore store)
    {
        using (_lock.EnterScope())
        {
            _stores.Remove(store);
        }
    }

    public void Dispose() => Multiplexer.Dispose();
}
