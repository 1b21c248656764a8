using System.Security.Cryptography;
using ChannelPool.PollingDuplex.PubSub;
using ChannelPool.PollingDuplex.Stores;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>What a client's message does: a pub/sub command, or the application's handler.</summary>
internal sealed partial class RedisSessionStore
{
    /// <summary>How long a node's claim on a message holds while the application's handler runs; a node that dies holds it no longer.</summary>
    private static readonly TimeSpan ClaimFor = TimeSpan.FromSeconds(30);

    /// <inheritdoc />
    protected override ValueTask<DuplexReceiveResult> ReceiveAsync(DuplexStoreSession session, long sequence, DuplexMessage message, CancellationToken cancellationToken) =>
        _handler is null
            ? ReceiveCommandAsync((RedisSession)session, sequence, message)
            : ReceiveByHandlerAsync((RedisSession)session, sequence, message, cancellationToken);

    /// <summary>
    /// Runs a pub/sub command and counts it received. The source's half goes first and is safe to repeat (a publish
    /// leaves a marker, so a send repeated after a lost response appends once); the session's half then receives the
    /// message only if its sequence is the next. A node that dies between the two leaves the message unreceived, and
    /// the client's retry finishes it.
    /// </summary>
    private async ValueTask<DuplexReceiveResult> ReceiveCommandAsync(RedisSession session, long sequence, DuplexMessage message)
    {
        ThrowIfRefused();
        string? rejection = null;
        RedisValue op = RedisValue.EmptyString, source = RedisValue.EmptyString, cursor = RedisValue.EmptyString;
        try
        {
            var command = PubSubCommand.Parse(message);
            source = RedisKeys.TopicSource(command.Topic);
            switch (command.Operation)
            {
                case PubSubOperation.Subscribe:
                    op = "sub";
                    cursor = await JoinAsync(source!, session.Id, LiveUntil(Now()));
                    break;
                case PubSubOperation.Unsubscribe:
                    op = "unsub";
                    await LeaveSourceAsync(source!, session.Id);
                    break;
                default:
                    rejection = await PublishCommandAsync(session, sequence, command, source!);
                    break;
            }
        }
        catch (DuplexMessageRejectedException ex)
        {
            rejection = ex.Message;
        }

        var r = await EvalSessionAsync(RedisSessionScripts.Receive, session.Id, session.TokenHash, session.UserId, sequence, op, source, cursor, Options.MaxSubscriptionsPerSession);
        if ((long)r[0] == 5)
        {
            // Past the session's subscription limit: counted received, and the membership the join made is undone.
            await LeaveSourceAsync(source!, session.Id);
            return DuplexReceiveResult.Rejected(sequence, SubscriptionLimit(PubSubCommand.Parse(message).Topic), DuplexWire.Codes.TooManySubscriptions);
        }

        return Received(r, sequence, rejection);
    }

    private string SubscriptionLimit(string topic) =>
        $"subscribing to topic \"{topic}\" would exceed this session's limit of {Options.MaxSubscriptionsPerSession} subscriptions (MaxSubscriptionsPerSession). Unsubscribe from a topic first, or use another session.";

    /// <inheritdoc />
    /// <remarks>The receive script with nothing to do: counted received once, across the cluster, as a command would be.</remarks>
    protected override async ValueTask<DuplexReceiveResult> RefuseAsync(DuplexStoreSession session, long sequence, string reason, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(session);
        ArgumentNullException.ThrowIfNull(reason);
        ThrowIfRefused();
        var s = (RedisSession)session;
        var r = await EvalSessionAsync(RedisSessionScripts.Receive, s.Id, s.TokenHash, s.UserId, sequence, RedisValue.EmptyString, RedisValue.EmptyString, RedisValue.EmptyString);
        return Received(r, sequence, reason);
    }

    /// <summary>Reads the receive script's answer: {status, reason}, {1, received} when not the next, or {0, sequence}.</summary>
    private static DuplexReceiveResult Received(RedisResult[] r, long sequence, string? rejection) => (long)r[0] switch
    {
        < 0 => DuplexReceiveResult.LookupFailed(Read(r)),
        1 when (long)r[1] >= sequence => DuplexReceiveResult.AlreadyReceived((long)r[1]),
        1 => DuplexReceiveResult.OutOfOrder((long)r[1]),
        _ when rejection is not null => DuplexReceiveResult.Rejected(sequence, rejection),
        _ => DuplexReceiveResult.Accepted(sequence),
    };

    /// <summary>Appends a client's publish to its topic's log once; returns why it was refused, or null.</summary>
    private async Task<string?> PublishCommandAsync(RedisSession session, long sequence, PubSubCommand command, string source)
    {
        RedisValue entry = RedisValue.EmptyString;
        string? tooLarge = null;
        try
        {
            entry = RedisLogEntry.Store(command.CreateNotification(Options.MaxMessageSize));
        }
        catch (DuplexMessageRejectedException ex)
        {
            // As on one node, refused only if the topic has a subscriber to refuse it for: the script decides.
            tooLarge = ex.Message;
        }

        var keys = Keys.Source(source);
        var appended = await AppendAsync(keys, source, command.Echo ? string.Empty : session.Id, entry, tooLarge is not null, keys.Marker(session.Id), sequence);
        return appended == 2 ? tooLarge : null;
    }

    /// <summary>
    /// Hands a message to the application's handler, once across the cluster: a claim in the session's hash keeps a
    /// second request carrying it (on any node) from running the handler too, and settling the claim counts it received.
    /// </summary>
    private async ValueTask<DuplexReceiveResult> ReceiveByHandlerAsync(RedisSession session, long sequence, DuplexMessage message, CancellationToken cancellationToken)
    {
        ThrowIfRefused();
        var nonce = Convert.ToHexString(RandomNumberGenerator.GetBytes(8));
        var waiting = TimeProvider.GetTimestamp();
        while (true)
        {
            var claim = await EvalSessionAsync(RedisSessionScripts.Claim, session.Id, session.TokenHash, session.UserId, sequence, nonce, Now() + (long)ClaimFor.TotalMilliseconds);
            var received = claim.Length > 1 ? (long)claim[1] : 0;
            switch ((long)claim[0])
            {
                case < 0:
                    return DuplexReceiveResult.LookupFailed(Read(claim));
                case 1:
                    return received >= sequence ? DuplexReceiveResult.AlreadyReceived(received) : DuplexReceiveResult.OutOfOrder(received);
                case 4 when TimeProvider.GetElapsedTime(waiting) > Connection.Options.OperationTimeout:
                    throw new DuplexStoreUnavailableException($"Message {sequence} of session {session.Id} is being received through another request; try again.");
                case 4:
                    await Task.Delay(TimeSpan.FromMilliseconds(20), TimeProvider, cancellationToken);
                    continue;
            }

            break;
        }

        var handle = CreateSessionHandle(session.Id, session.UserId, session.Encoding, session.Mode);
        try
        {
            await _handler!.OnMessageAsync(handle, message, cancellationToken);
        }
        catch (DuplexMessageRejectedException ex)
        {
            return await SettleAsync(session, sequence, nonce, received: true) is var settled && settled == sequence
                ? DuplexReceiveResult.Rejected(sequence, ex.Message)
                : DuplexReceiveResult.AlreadyReceived(settled);
        }
        catch (Exception ex) when (ex is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
        {
            return DuplexReceiveResult.Failed(await SettleAsync(session, sequence, nonce, received: false), ex);
        }
        catch (OperationCanceledException)
        {
            await SettleAsync(session, sequence, nonce, received: false);
            throw;
        }

        var accepted = await SettleAsync(session, sequence, nonce, received: true);
        return accepted == sequence ? DuplexReceiveResult.Accepted(sequence) : DuplexReceiveResult.AlreadyReceived(accepted);
    }

    private async Task<long> SettleAsync(RedisSession session, long sequence, string nonce, bool received)
    {
        var r = await EvalSessionAsync(RedisSessionScripts.Settle, session.Id, session.TokenHash, session.UserId, sequence, nonce, received ? "1" : "0");
        return (long)r[0] == 0 ? (long)r[1] : sequence - 1;
    }
}
