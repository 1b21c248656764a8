using ChannelPool.PollingDuplex.Redis;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// One node's Redis store, driven through the seam without HTTP: for what a request cannot carry in these tests (a
/// user's identity) or what is counted per store step (Redis commands). Two of them on one key prefix are two nodes.
/// </summary>
internal sealed class RedisStoreNode : IAsyncDisposable
{
    private readonly RedisDuplexConnection _connection;

    private RedisStoreNode(RedisDuplexConnection connection, RedisSessionStore store)
    {
        _connection = connection;
        Store = store;
    }

    public DuplexSessionStore Store { get; }

    internal RedisSessionStore RedisStore => (RedisSessionStore)Store;

    public static async Task<RedisStoreNode> StartAsync(string configuration, string keyPrefix, Action<PollingDuplexOptions>? configure = null, AsyncPollingDuplexHandler? handler = null, TimeProvider? time = null)
    {
        // Its opens carry no user and no address: one anonymous owner, whose cap is lifted here.
        var options = new PollingDuplexOptions { MaxSessionsPerAddress = 1_000_000 };
        configure?.Invoke(options);
        var connection = new RedisDuplexConnection(Options.Create(new RedisPollingDuplexOptions { Configuration = configuration, KeyPrefix = keyPrefix }));
        var store = new RedisSessionStore(connection, "/pubsub", options, time ?? TimeProvider.System, handler, NullLogger.Instance);
        await store.Subscribed.Within();
        return new RedisStoreNode(connection, store);
    }

    public static string NewKeyPrefix() => "test-" + Guid.NewGuid().ToString("N")[..12];

    public async Task<(string Id, string Token)> OpenAsync(string? userId = null, PollingDuplexMode mode = PollingDuplexMode.MultipleMessagesPerPoll)
    {
        var opened = await Store.OpenAsync(DuplexEncoding.Text, mode, userId, remoteAddress: null, CancellationToken.None);
        Assert.That(opened.Status, Is.EqualTo(DuplexOpenStatus.Opened));
        return (opened.SessionId!, opened.Token!);
    }

    /// <summary>Receives one pub/sub command on the session, as a send request would.</summary>
    public async Task<DuplexReceiveResult> CommandAsync((string Id, string Token) session, long sequence, string command, string? userId = null)
    {
        var found = await Store.FindAsync(session.Id, session.Token, userId, CancellationToken.None);
        Assert.That(found.Status, Is.EqualTo(DuplexLookupStatus.Found));
        return await Store.ReceiveAsync(found.Session!, sequence, DuplexMessage.FromJsonUtf8(System.Text.Encoding.UTF8.GetBytes(command)), CancellationToken.None);
    }

    /// <summary>Polls once as a poll request would: waits up to <paramref name="wait"/> for frames, then ends the poll.</summary>
    public async Task<(DuplexPollStart Start, List<DuplexFrame> Frames)> PollAsync((string Id, string Token) session, long ack, TimeSpan wait, string? userId = null, int max = 1000)
    {
        var start = await Store.BeginPollAsync(session.Id, session.Token, userId, ack, CancellationToken.None);
        var frames = new List<DuplexFrame>();
        if (start.Poll is not { } poll)
        {
            return (start, frames);
        }

        using var timeout = new CancellationTokenSource(wait);
        try
        {
            while (!timeout.IsCancellationRequested)
            {
                var take = await poll.TakeAsync(frames, max, CancellationToken.None);
                if (take.Status != DuplexTakeStatus.Waiting)
                {
                    break;
                }

                if (frames.Count > 0)
                {
                    // What came within a short batch window after the first frame rides along.
                    await take.Wake!.WaitAsync(TimeSpan.FromMilliseconds(50)).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
                    if (!take.Wake.IsCompleted)
                    {
                        break;
                    }

                    continue;
                }

                await take.Wake!.WaitAsync(timeout.Token).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            }
        }
        finally
        {
            await poll.EndAsync(CancellationToken.None);
        }

        return (start, frames);
    }

    public async ValueTask DisposeAsync()
    {
        Store.Dispose();
        _connection.Dispose();
        await Task.CompletedTask;
    }
}
