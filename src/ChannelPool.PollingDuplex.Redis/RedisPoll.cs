using ChannelPool.PollingDuplex.Stores;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// A poll held on this node of a session in Redis: which one it is (a newer number on any node supersedes it), how far
/// its response has got, and the wake signal it waits on.
/// </summary>
internal sealed class RedisPoll(RedisSessionStore store, string id, string tokenHash, long number, long cursor, DuplexEncoding encoding, PollingDuplexMode mode)
    : DuplexPoll(id, encoding, mode)
{
    private long _cursor = cursor;

    // Registered before each take, so a wake published while the script runs is not missed.
    private TaskCompletionSource? _signal;

    // Whether the last take also ended the poll in Redis (a single-message response ends with its frame).
    private bool _ended;

    /// <inheritdoc />
    protected override async ValueTask<DuplexTakeResult> TakeAsync(List<DuplexFrame> frames, int maxFrames, CancellationToken cancellationToken)
    {
        if (_signal is { Task.IsCompleted: false } armed)
        {
            // Every change to the session publishes a wake, and none came since the last take: nothing new, so no round trip.
            return DuplexTakeResult.Waiting(armed.Task);
        }

        var signal = _signal = store.Connection.Signal(SessionId);
        var single = Mode == PollingDuplexMode.SingleMessagePerPoll;
        var count = frames.Count;
        var r = await store.TakeAsync(SessionId, tokenHash, number, _cursor, maxFrames, frames, endWithFrames: single);
        if (frames.Count > count)
        {
            _cursor = frames[^1].Sequence;
            _ended = single;
            return DuplexTakeResult.Frames;
        }

        return (long)r[0] switch
        {
            -5 => DuplexTakeResult.Superseded,
            < 0 => DuplexTakeResult.LookupFailed(RedisSessionStore.Read(r)),
            _ => DuplexTakeResult.Waiting(signal.Task),
        };
    }

    /// <inheritdoc />
    protected override async ValueTask EndAsync(CancellationToken cancellationToken)
    {
        // A signal nobody fired would stay registered until the session's next wake.
        if (_signal is { Task.IsCompleted: false } signal)
        {
            store.Connection.Forget(SessionId, signal);
        }

        if (_ended)
        {
            return;
        }

        try
        {
            await store.EndPollAsync(SessionId, tokenHash, number);
        }
        catch (DuplexStoreUnavailableException)
        {
            // The poll stops counting as outstanding at its deadline anyway.
        }
    }
}
