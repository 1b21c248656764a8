using System.Text.Json;
using ChannelPool.PollingDuplex.PubSub;
using Microsoft.AspNetCore.Http;
using StackExchange.Redis;
using static ChannelPool.PollingDuplex.PollingDuplexEndpoints;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// The four requests of the protocol for the pub/sub service, with the session and topic state in Redis, so any node
/// answers any request. Requests are checked and answered by the same code as on one node; only the state moves.
/// </summary>
internal sealed class RedisPubSubEndpoints(RedisSessionStore store)
{
    /// <summary>The problem code of a request that failed because Redis did not answer.</summary>
    public const string StoreUnavailable = "store-unavailable";

    private PollingDuplexOptions Options => store.Options;

    /// <summary>Runs a request, answering <c>503 store-unavailable</c> when Redis does not answer. Each step was one script, so nothing is half-done.</summary>
    public static RequestDelegate Guard(Func<HttpContext, Task> request) => async context =>
    {
        try
        {
            await request(context);
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            context.Response.Headers.RetryAfter = "1";
            await WriteProblemAsync(
                context,
                503,
                StoreUnavailable,
                "Session store unavailable",
                $"The session store (Redis) did not answer: {ex.GetType().Name}. Each change is all or nothing, so nothing was half-done; try again.");
        }
    };

    public async Task OpenAsync(HttpContext context)
    {
        if (await ReadOpenRequestAsync(context) is not var (encoding, mode))
        {
            return;
        }

        var token = PollingDuplexServer.Base64Url(System.Security.Cryptography.RandomNumberGenerator.GetBytes(32));
        var id = PollingDuplexServer.Base64Url(System.Security.Cryptography.RandomNumberGenerator.GetBytes(16));
        if (await store.OpenAsync(id, Hash(token), encoding, mode) is { } refusal)
        {
            await WriteRefusedAsync(context, Options, refusal);
            return;
        }

        await WriteOpenedAsync(context, Options, id, token, encoding, mode);
    }

    public async Task SendAsync(HttpContext context)
    {
        if (Credentials(context) is not var (id, hash))
        {
            await WriteLookupFailureAsync(context, Id(context), SessionLookup.MissingToken, null);
            return;
        }

        var (lookup, encoding, _, received) = await store.FindAsync(id, hash);
        if (lookup.Status != 0)
        {
            await FailAsync(context, id, lookup);
            return;
        }

        if (await ReadSendMessagesAsync(context, Options, id, encoding) is not { } frames)
        {
            return;
        }

        var first = 0;
        while (first < frames.Count && frames[first].Sequence <= received)
        {
            first++;
        }

        for (var i = first; i < frames.Count; i++)
        {
            var expected = received + 1 + (i - first);
            if (frames[i].Sequence != expected)
            {
                await WriteOutOfOrderAsync(context, id, received, expected, frames[i].Sequence);
                return;
            }
        }

        for (var i = first; i < frames.Count; i++)
        {
            var sequence = frames[i].Sequence;
            var payload = frames[i].Message.Payload;
            string? rejected = null;
            string? tooLarge = null;
            PubSubHandler.Command command = default;
            byte[] notification = [];
            try
            {
                command = PubSubHandler.Parse(payload);
            }
            catch (DuplexMessageRejectedException ex)
            {
                rejected = ex.Message;
            }

            if (rejected is null && command.Op == "publish")
            {
                try
                {
                    var span = payload.Span;
                    notification = PubSubHandler.Notification(command.Topic, span[command.RawTopic][1..^1], span[command.Data], Options.MaxMessageSize, fromClient: true);
                }
                catch (DuplexMessageRejectedException ex)
                {
                    // As on one node, refused only if the topic has a subscriber to refuse it for: the script decides.
                    tooLarge = ex.Message;
                }
            }

            (Lookup result, long now, long _) = await store.ReceiveAsync(id, hash, sequence, rejected is null ? command.Op : string.Empty, command.Topic ?? string.Empty, notification, command.Echo, tooLarge is not null);
            switch (result.Status)
            {
                case 0:
                    received = now;
                    break;
                case 2:
                    received = now;
                    rejected = tooLarge;
                    break;
                case 1 when now >= sequence:
                    // Another request of this session, on another node perhaps, received it first: once is enough.
                    received = now;
                    continue;
                case 1:
                    await WriteOutOfOrderAsync(context, id, now, now + 1, sequence);
                    return;
                default:
                    await FailAsync(context, id, result);
                    return;
            }

            if (rejected is not null)
            {
                await WriteRejectedAsync(context, sequence, rejected, received);
                return;
            }
        }

        await WriteReceivedAsync(context, received);
    }

    public async Task PollAsync(HttpContext context)
    {
        if (Credentials(context) is not var (id, hash))
        {
            await WriteLookupFailureAsync(context, Id(context), SessionLookup.MissingToken, null);
            return;
        }

        if (!TryReadAck(context, out var ack))
        {
            // As on one node: a session that fails its lookup says so before its ack is judged.
            var (found, _, _, _) = await store.FindAsync(id, hash);
            await (found.Status == 0 ? WriteBadAckAsync(context) : FailAsync(context, id, found));
            return;
        }

        var (lookup, pollNumber, acked, encoding, mode, _) = await store.BeginPollAsync(id, hash, ack);
        switch (lookup.Status)
        {
            case 0:
                break;
            case -4:
                await WriteAckBeyondSentAsync(context, id, ack);
                return;
            default:
                await FailAsync(context, id, lookup);
                return;
        }

        var poll = new RedisPoll(id, hash, pollNumber, acked, encoding, mode);
        try
        {
            await AnswerPollAsync(context, poll);
        }
        finally
        {
            // A signal nobody fired would stay registered until the session's next wake.
            if (poll.Signal is { Task.IsCompleted: false } signal)
            {
                store.Connection.Forget(id, signal);
            }

            try
            {
                if (!poll.Ended)
                {
                    await store.EndPollAsync(id, hash, pollNumber);
                }
            }
            catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
            {
                // The poll stops counting as outstanding at its deadline anyway.
            }
        }
    }

    public async Task CloseAsync(HttpContext context)
    {
        if (Credentials(context) is not var (id, hash))
        {
            await WriteLookupFailureAsync(context, Id(context), SessionLookup.MissingToken, null);
            return;
        }

        var lookup = await store.EndAsync(id, hash, DuplexSessionEndReason.ClosedByClient);
        if (lookup.Status == 0 || (lookup.Status == -3 && lookup.Reason == (long)DuplexSessionEndReason.ClosedByClient))
        {
            context.Response.StatusCode = StatusCodes.Status204NoContent;
            return;
        }

        await FailAsync(context, id, lookup);
    }

    private async Task AnswerPollAsync(HttpContext context, RedisPoll poll)
    {
        var time = store.TimeProvider;
        var started = time.GetTimestamp();
        var frames = new List<OutboundFrame>();
        var limit = poll.Mode == PollingDuplexMode.SingleMessagePerPoll ? 1 : Options.MaxPendingMessagesPerSession;

        // Wait for the first frame, for at most the poll timeout.
        while (true)
        {
            var signal = poll.Signal = store.Connection.Signal(poll.Id);

            // A single-message response ends with its frame, so that take ends the poll too.
            var single = poll.Mode == PollingDuplexMode.SingleMessagePerPoll;
            var lookup = await store.TakeAsync(poll.Id, poll.TokenHash, poll.Number, poll.Cursor, limit, frames, endWithFrames: single);
            if (frames.Count > 0)
            {
                poll.Ended = single;
                break;
            }

            if (lookup.Status == -5)
            {
                await WriteSupersededAsync(context, poll.Id);
                return;
            }

            if (lookup.Status != 0)
            {
                await FailAsync(context, poll.Id, lookup);
                return;
            }

            var remaining = Options.ServerPollTimeout - time.GetElapsedTime(started);
            if (remaining <= TimeSpan.Zero || !await WaitAsync(signal, remaining, context.RequestAborted))
            {
                store.Connection.Forget(poll.Id, signal);
                if (context.RequestAborted.IsCancellationRequested)
                {
                    return;
                }

                if (time.GetElapsedTime(started) >= Options.ServerPollTimeout)
                {
                    context.Response.StatusCode = StatusCodes.Status204NoContent;
                    context.Response.Headers.CacheControl = "no-store";
                    return;
                }
            }
        }

        var response = context.Response;
        response.StatusCode = StatusCodes.Status200OK;
        response.ContentType = DuplexWire.ContentTypeOf(poll.Encoding);
        response.Headers.CacheControl = "no-store";
        var output = response.BodyWriter;
        var carried = Carry(poll, frames);
        try
        {
            WriteFrames(output, poll.Encoding, frames);
            await output.FlushAsync(context.RequestAborted);
            if (poll.Mode == PollingDuplexMode.MultipleMessagesPerPoll)
            {
                // Stream what comes within the batch window, as one node does. The signal registered before the
                // first take is still armed, so a wake since then is not missed, and no take runs without one.
                var windowStarted = time.GetTimestamp();
                while (carried < limit)
                {
                    var remaining = Options.BatchWindow - time.GetElapsedTime(windowStarted);
                    if (remaining <= TimeSpan.Zero || !await WaitAsync(poll.Signal!, remaining, context.RequestAborted))
                    {
                        break;
                    }

                    frames.Clear();
                    poll.Signal = store.Connection.Signal(poll.Id);
                    var lookup = await store.TakeAsync(poll.Id, poll.TokenHash, poll.Number, poll.Cursor, limit - carried, frames);
                    if (frames.Count == 0)
                    {
                        if (lookup.Status != 0)
                        {
                            break;
                        }

                        continue;
                    }

                    carried += Carry(poll, frames);
                    WriteFrames(output, poll.Encoding, frames);
                    await output.FlushAsync(context.RequestAborted);
                }
            }
        }
        catch (OperationCanceledException) when (context.RequestAborted.IsCancellationRequested)
        {
            // The client went away mid-response; its next poll, with the same ack, gets these frames again.
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            // Mid-response there is no status left to send; the client polls again with the same ack.
            context.Abort();
        }
    }

    private static int Carry(RedisPoll poll, List<OutboundFrame> frames)
    {
        poll.Cursor = frames[^1].Sequence;
        return frames.Count;
    }

    private async Task<bool> WaitAsync(TaskCompletionSource signal, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var task = signal.Task;
        if (!task.IsCompleted)
        {
            await task.WaitAsync(timeout, store.TimeProvider, cancellationToken).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        }

        return task.IsCompleted;
    }

    private static Task FailAsync(HttpContext context, string id, Lookup lookup) =>
        WriteLookupFailureAsync(context, id, lookup.AsSessionLookup, lookup.Status == -3 ? (DuplexSessionEndReason)lookup.Reason : null);

    private static string Id(HttpContext context) => (string)context.Request.RouteValues["id"]!;

    private static (string Id, string TokenHash)? Credentials(HttpContext context) =>
        BearerToken(context) is { } token ? (Id(context), Hash(token)) : null;

    private static string Hash(string token) => Convert.ToBase64String(PollingDuplexServer.HashToken(token));

    /// <summary>A poll in progress: which one it is (a newer number supersedes it) and how far its response has got.</summary>
    private sealed class RedisPoll(string id, string tokenHash, long number, long cursor, DuplexEncoding encoding, PollingDuplexMode mode)
    {
        public string Id { get; } = id;

        public string TokenHash { get; } = tokenHash;

        public long Number { get; } = number;

        public long Cursor { get; set; } = cursor;

        public DuplexEncoding Encoding { get; } = encoding;

        public PollingDuplexMode Mode { get; } = mode;

        /// <summary>Gets or sets the wake signal the poll last registered.</summary>
        public TaskCompletionSource? Signal { get; set; }

        /// <summary>Gets or sets whether the poll's last take also ended it in Redis.</summary>
        public bool Ended { get; set; }
    }
}
