using System.Collections.Concurrent;
using Microsoft.Extensions.Options;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The node's one connection to the shared Redis, and the wake signals of the polls this node holds. A message for a
/// session, queued through any node, is announced on the endpoint's wake channel; the node holding that session's poll
/// wakes it here.
/// </summary>
internal sealed class RedisDuplexConnection : IDisposable
{
    private readonly ConcurrentDictionary<string, TaskCompletionSource> _signals = new(StringComparer.Ordinal);
    private readonly HashSet<string> _channels = [];

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
    }

    public RedisPollingDuplexOptions Options { get; }

    public ConnectionMultiplexer Multiplexer { get; }

    public IDatabase Database { get; }

    /// <summary>Listens on an endpoint's wake channel; StackExchange.Redis subscribes again after every reconnect.</summary>
    public void Listen(RedisChannel channel)
    {
        lock (_channels)
        {
            if (!_channels.Add(channel.ToString()))
            {
                return;
            }
        }

        try
        {
            Multiplexer.GetSubscriber().Subscribe(channel, (_, ids) => Wake(ids));
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            // Redis is away at start: the subscription is registered before it is sent, and StackExchange.Redis sends it
            // when the connection comes up. Until then requests get 503, and polls answer at their timeout.
        }
    }

    /// <summary>Gets the signal a poll of <paramref name="sessionId"/> waits on; register before looking for frames, so no wake is missed.</summary>
    public TaskCompletionSource Signal(string sessionId) =>
        _signals.GetOrAdd(sessionId, static _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));

    /// <summary>Forgets a signal nobody fired, once its poll is over.</summary>
    public void Forget(string sessionId, TaskCompletionSource signal) => _signals.TryRemove(KeyValuePair.Create(sessionId, signal));

    public void Dispose() => Multiplexer.Dispose();

    private void Wake(RedisValue ids)
    {
        var text = (string?)ids ?? string.Empty;
        foreach (var range in text.AsSpan().Split(' '))
        {
            var id = text[range];
            if (_signals.TryRemove(id, out var signal))
            {
                signal.TrySetResult();
            }
        }
    }
}
