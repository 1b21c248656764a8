using System.Globalization;
using ChannelPool.PollingDuplex.Stores;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// Sends from the server side, from any node: to one session (its queue), to a topic or to a user (their logs: one
/// append, whatever the number of readers), and the cluster-wide subscriber count.
/// </summary>
internal sealed partial class RedisSessionStore
{
    /// <inheritdoc />
    protected override async ValueTask<DuplexSendResult> SendAsync(string sessionId, DuplexMessage message, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(sessionId);
        ArgumentNullException.ThrowIfNull(message);
        ThrowIfTooLarge(message);
        ThrowIfRefused();
        if (!IsSessionId(sessionId))
        {
            return DuplexSendResult.SessionEnded;
        }

        var r = await EvalSessionAsync(
            RedisSessionScripts.Send,
            sessionId,
            string.Empty,
            null,
            RedisLogEntry.Store(message),
            Options.MaxPendingMessagesPerSession,
            Options.MaxPendingBytesPerSession,
            PolicyName);
        switch ((long)r[0])
        {
            case 0:
                return DuplexSendResult.Queued;
            case 1:
                RecordMessagesDropped(1);
                return DuplexSendResult.Dropped;
            case 2:
                RecordMessagesDropped(1);
                Ended(sessionId, DuplexSessionEndReason.Overflow, r, 1);
                return DuplexSendResult.SessionFaulted;
            case -8:
                throw new ArgumentException($"Session {sessionId} uses the text encoding, which carries JSON messages only.", nameof(message));
            default:
                return DuplexSendResult.SessionEnded;
        }
    }

    /// <inheritdoc />
    protected override async ValueTask CloseSessionAsync(string sessionId, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(sessionId);
        ThrowIfRefused();
        if (IsSessionId(sessionId))
        {
            await EndByServerAsync(sessionId, DuplexSessionEndReason.ClosedByServer, onlyIfPending: false);
        }
    }

    /// <inheritdoc />
    protected override async ValueTask PublishAsync(string topic, DuplexMessage notification, CancellationToken cancellationToken)
    {
        ArgumentException.ThrowIfNullOrEmpty(topic);
        ArgumentNullException.ThrowIfNull(notification);
        ThrowIfRefused();
        var source = RedisKeys.TopicSource(topic);
        var keys = Keys.Source(source);
        await AppendAsync(keys, source, string.Empty, RedisLogEntry.Store(notification), tooLarge: false, marker: keys.Meta);
    }

    /// <inheritdoc />
    protected override async ValueTask SendToUserAsync(string userId, DuplexMessage message, CancellationToken cancellationToken)
    {
        ArgumentException.ThrowIfNullOrEmpty(userId);
        ArgumentNullException.ThrowIfNull(message);
        ThrowIfTooLarge(message);
        ThrowIfRefused();
        var source = RedisKeys.UserSource(userId);
        var keys = Keys.Source(source);
        await AppendAsync(keys, source, string.Empty, RedisLogEntry.Store(message), tooLarge: false, marker: keys.Meta);
    }

    /// <inheritdoc />
    protected override async ValueTask<long> CountSubscribersAsync(string topic, CancellationToken cancellationToken)
    {
        ArgumentException.ThrowIfNullOrEmpty(topic);
        ThrowIfRefused();
        try
        {
            return await _db.SortedSetLengthAsync(Keys.Source(RedisKeys.TopicSource(topic)).Members, Now(), double.PositiveInfinity, Exclude.Start).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            throw Unavailable(ex);
        }
    }

    /// <summary>
    /// Appends an entry to a source's log if it has readers: 0 appended, 1 appended before (the marker), 2 too large
    /// with readers, 3 nobody reads it. <paramref name="marker"/> is the meta key when there is none.
    /// </summary>
    private async Task<long> AppendAsync(SourceKeys keys, string source, string publisher, RedisValue entry, bool tooLarge, RedisKey marker, long sequence = 0)
    {
        RedisKey[] all = [.. keys.All, marker];
        var r = await EvalAsync(
            RedisSourceScripts.Append,
            all,
            [Now(), SourceTtlMs, publisher, entry, Options.MaxPendingBytesPerSession, tooLarge ? "1" : "0", _wake, source, 2 * InactivityMs, sequence]);
        return (long)r[0];
    }

    /// <summary>
    /// Adds (or renews) a session as a reader of a source; returns the cursor a new reader starts at, 'epoch:last id'.
    /// A renewal reports the session's <paramref name="cursor"/> there, so the log can free what every reader has taken.
    /// </summary>
    private async Task<RedisValue> JoinAsync(string source, string sessionId, long until, string? cursor = null)
    {
        var r = await EvalAsync(RedisSourceScripts.Join, Keys.Source(source).All, [Now(), SourceTtlMs, sessionId, until, cursor ?? string.Empty]);
        return string.Create(CultureInfo.InvariantCulture, $"{(string?)r[0]}:{(long)r[1]}");
    }

    private async Task LeaveSourceAsync(string source, string sessionId)
    {
        try
        {
            await LeaveAsync(source, sessionId);
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            throw Unavailable(ex);
        }
    }

    /// <summary>Removes a reader from a source; the last one out removes the source's keys, so a topic nobody reads holds nothing.</summary>
    private Task<RedisResult[]> LeaveAsync(string source, string sessionId) =>
        EvalAsync(RedisSourceScripts.Leave, Keys.Source(source).All, [Now(), SourceTtlMs, sessionId]);

    private void ThrowIfTooLarge(DuplexMessage message)
    {
        if (message.Payload.Length > Options.MaxMessageSize)
        {
            throw new ArgumentException(
                $"A {message.Payload.Length}-byte message exceeds the endpoint's {Options.MaxMessageSize}-byte MaxMessageSize, which its clients enforce.",
                nameof(message));
        }
    }
}
