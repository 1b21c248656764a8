namespace ChannelPool.Perf.Clients;

/// <summary>Receives one notification of the fleet's client number <paramref name="client"/>.</summary>
internal delegate void FleetNotificationHandler(int client, ReadOnlySpan<byte> data);

/// <summary>
/// Simulated clients of one transport, all subscribed to one topic, grown and shrunk between probes so a search does not
/// reconnect everyone each time. Each client hands its notifications to <see cref="OnNotification"/> with its index.
/// </summary>
internal sealed class ClientFleet : IAsyncDisposable
{
    private readonly IPubSubTransport _transport;
    private readonly string _topic;
    private readonly int _connectConcurrency;
    private readonly List<IPubSubClient> _clients = [];

    public ClientFleet(IPubSubTransport transport, string topic, int connectConcurrency)
    {
        _transport = transport;
        _topic = topic;
        _connectConcurrency = connectConcurrency;
    }

    /// <summary>Called for each notification, with the receiving client's index (0 to <see cref="Count"/> − 1).</summary>
    public FleetNotificationHandler? OnNotification { get; set; }

    public int Count => _clients.Count;

    /// <summary>Connects and subscribes clients, or disconnects the newest, until there are <paramref name="count"/>.</summary>
    public async Task ResizeAsync(int count, IProgress<int>? progress, CancellationToken cancellationToken)
    {
        if (count < _clients.Count)
        {
            var extra = _clients.GetRange(count, _clients.Count - count);
            _clients.RemoveRange(count, extra.Count);
            await Parallel.ForEachAsync(extra, new ParallelOptions { MaxDegreeOfParallelism = _connectConcurrency }, async (client, _) => await client.DisposeAsync());
            return;
        }

        var first = _clients.Count;
        var added = new IPubSubClient[count - first];
        var done = 0;
        try
        {
            await Parallel.ForEachAsync(
                Enumerable.Range(0, added.Length),
                new ParallelOptions { MaxDegreeOfParallelism = _connectConcurrency, CancellationToken = cancellationToken },
                async (i, token) =>
                {
                    var index = first + i;
                    var client = await _transport.ConnectAsync(data => OnNotification?.Invoke(index, data), token);
                    added[i] = client;
                    await client.SubscribeAsync(_topic, token);
                    progress?.Report(first + Interlocked.Increment(ref done));
                });
        }
        catch
        {
            await Task.WhenAll(added.Where(c => c is not null).Select(c => c.DisposeAsync().AsTask()));
            throw;
        }

        _clients.AddRange(added);
    }

    public async ValueTask DisposeAsync() => await ResizeAsync(0, null, CancellationToken.None);
}
