using System.Collections.Concurrent;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>
/// Pings the server for every client that has been silent for <see cref="PingInterval"/>, from one timer shared by all
/// of a transport's clients instead of a timer each. SignalR's own clients ping every 15 s, so the simulated ones do
/// too: the server's inbound ping load is part of what a real deployment pays. The server arms its client timeout (30 s
/// by default) at a client's first ping, so once a client has pinged it must keep pinging or be dropped.
/// </summary>
internal sealed class SignalRKeepAlive : IDisposable
{
    /// <summary>The default longest silence: half the server's default client timeout, as SignalR's own clients use.</summary>
    public static readonly TimeSpan DefaultPingInterval = TimeSpan.FromSeconds(15);

    // A one-second tick spreads the pings: each client pings 15 s after its own last send, not all of them at once.
    private static readonly TimeSpan Tick = TimeSpan.FromSeconds(1);

    private readonly ConcurrentDictionary<SignalRClient, byte> _clients = new();
    private readonly Timer _timer;
    private int _ticking;

    /// <summary>Initializes the keep-alive and starts its timer.</summary>
    public SignalRKeepAlive() => _timer = new Timer(static state => ((SignalRKeepAlive)state!).PingSilentClients(), this, Tick, Tick);

    /// <summary>Gets or sets the longest a client stays silent; a ping goes within a second after.</summary>
    public TimeSpan PingInterval { get; set; } = DefaultPingInterval;

    /// <summary>Gets how many clients are kept alive.</summary>
    public int Count => _clients.Count;

    /// <summary>Starts keeping <paramref name="client"/> alive.</summary>
    /// <param name="client">A connected client.</param>
    public void Add(SignalRClient client) => _clients.TryAdd(client, 0);

    /// <summary>Stops keeping <paramref name="client"/> alive.</summary>
    /// <param name="client">A client whose connection has ended.</param>
    public void Remove(SignalRClient client) => _clients.TryRemove(client, out _);

    /// <summary>Stops the timer.</summary>
    public void Dispose() => _timer.Dispose();

    private void PingSilentClients()
    {
        // A tick that overruns the next one (a starved thread pool) makes the next one skip rather than pile up.
        if (Interlocked.Exchange(ref _ticking, 1) != 0)
        {
            return;
        }

        try
        {
            var now = Environment.TickCount64;
            var interval = PingInterval;
            foreach (var (client, _) in _clients)
            {
                client.PingIfIdle(now, interval);
            }
        }
        finally
        {
            Volatile.Write(ref _ticking, 0);
        }
    }
}
