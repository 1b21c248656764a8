using System.Buffers;
using System.IO.Pipelines;
using System.Net;
using System.Net.Http.Headers;
using System.Runtime.CompilerServices;
using System.Text.Json;
using System.Threading.Channels;
using ChannelPool.PollingDuplex;

namespace ChannelPool.PollingDuplex.Client;

/// <summary>
/// An open polling duplex session. A background loop keeps one poll outstanding, hands every message to the
/// application exactly once and in order, and polls again with the same acknowledgement after a dropped connection, so
/// the server sends again whatever was lost. Sends are numbered and retried without being delivered twice.
/// </summary>
public sealed class DuplexClientSession : IAsyncDisposable
{
    // A body up to this size, its length known, is read whole; a longer or streamed one through a pipe, frame by frame.
    private const int WholeBodyLimit = 256 * 1024;
    private readonly PollingDuplexClient _client;
    private readonly string _token;
    private readonly Uri _sessionUri;
    private readonly Uri _messagesUri;
    private readonly TimeSpan _pollTimeout;
    private readonly int _maxMessageSize;

    /// <summary>Gets or sets the most messages one send request carries: the server's <c>maxMessagesPerSend</c>.</summary>
    internal int MaxMessagesPerSend { get; set; } = int.MaxValue;
    private readonly Channel<DuplexDelivery> _inbox;
    private readonly CancellationTokenSource _stopping = new();
    private readonly SemaphoreSlim _sendGate = new(1, 1);
    private Task _pollLoop = Task.CompletedTask;

    // The poll's timeout source, re-armed for each poll rather than made anew: polls run one at a time, on the loop.
    private CancellationTokenSource? _pollTimer;
    private CancellationToken _pollTimerStopping;
    private long _delivered;
    private long _sent;
    private int _state;
    private Exception? _fault;

    internal DuplexClientSession(
        PollingDuplexClient client, string id, string token, DuplexEncoding encoding, PollingDuplexMode mode, TimeSpan serverPollTimeout, int maxMessageSize)
    {
        _client = client;
        _token = token;
        Id = id;
        Encoding = encoding;
        Mode = mode;
        _maxMessageSize = maxMessageSize;
        _sessionUri = new Uri(client.Endpoint, $"sessions/{id}");
        _messagesUri = new Uri(client.Endpoint, $"sessions/{id}/messages");
        _pollTimeout = serverPollTimeout + client.Options.PollGrace;
        _inbox = Channel.CreateBounded<DuplexDelivery>(new BoundedChannelOptions(client.Options.ReceiveBufferCapacity)
        {
            SingleReader = false,
            SingleWriter = true,
            FullMode = BoundedChannelFullMode.Wait,
        });
    }

    /// <summary>Gets the session's id.</summary>
    public string Id { get; }

    /// <summary>Gets the session's encoding.</summary>
    public DuplexEncoding Encoding { get; }

    /// <summary>Gets the session's mode.</summary>
    public PollingDuplexMode Mode { get; }

    /// <summary>Gets where the session is in its life.</summary>
    public DuplexClientSessionState State => (DuplexClientSessionState)Volatile.Read(ref _state);

    /// <summary>Gets why the session faulted: the server's error (expired, overflow, closed) or the connection lost.</summary>
    public Exception? Fault => Volatile.Read(ref _fault);

    /// <summary>Gets the sequence number of the last item handed to the application: what the next poll acknowledges.</summary>
    public long LastReceivedSequence => Volatile.Read(ref _delivered);

    /// <summary>
    /// Reads items as they arrive, in order, each exactly once. Completes when the session is closed; throws the
    /// session's <see cref="Fault"/> (after the items received before it) when the session faults.
    /// </summary>
    /// <param name="cancellationToken">Stops reading; the session goes on.</param>
    /// <returns>The items.</returns>
    public async IAsyncEnumerable<DuplexDelivery> ReadAllAsync([EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        while (true)
        {
            DuplexDelivery item;
            try
            {
                if (!await _inbox.Reader.WaitToReadAsync(cancellationToken).ConfigureAwait(false))
                {
                    yield break;
                }

                if (!_inbox.Reader.TryRead(out item))
                {
                    continue;
                }
            }
            catch (ChannelClosedException ex) when (ex.InnerException is not null)
            {
                throw ex.InnerException;
            }

            yield return item;
        }
    }

    /// <summary>Waits for the next item.</summary>
    /// <param name="cancellationToken">Stops waiting.</param>
    /// <returns>The next item, in order.</returns>
    /// <exception cref="PollingDuplexException">The session faulted, or was closed, before another item came.</exception>
    public async ValueTask<DuplexDelivery> ReceiveAsync(CancellationToken cancellationToken = default)
    {
        try
        {
            return await _inbox.Reader.ReadAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (ChannelClosedException ex)
        {
            throw ex.InnerException ?? new PollingDuplexException($"Session {Id} is closed.");
        }
    }

    /// <summary>Sends one message.</summary>
    /// <param name="message">The message; a text session takes JSON messages only.</param>
    /// <param name="cancellationToken">Cancels the send.</param>
    /// <returns>A task that completes when the server's application has taken the message.</returns>
    public ValueTask SendAsync(DuplexMessage message, CancellationToken cancellationToken = default) =>
        SendAsync([message], cancellationToken);

    /// <summary>
    /// Sends messages in one request, numbered in order. A dropped connection is retried with the same numbers, so the
    /// server's application takes each message once. Sends on one session run one at a time.
    /// </summary>
    /// <param name="messages">The messages.</param>
    /// <param name="cancellationToken">Cancels the send.</param>
    /// <returns>A task that completes when the server's application has taken every message.</returns>
    /// <exception cref="ArgumentException">A message does not fit the session: raw bytes on a text session, or too large.</exception>
    /// <exception cref="PollingDuplexException">The server refused the messages, or the session is over.</exception>
    public async ValueTask SendAsync(IReadOnlyList<DuplexMessage> messages, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(messages);
        foreach (var message in messages)
        {
            if (Encoding == DuplexEncoding.Text && !message.IsJson)
            {
                throw new ArgumentException($"Session {Id} uses the text encoding, which carries JSON messages only.", nameof(messages));
            }

            if (message.Payload.Length > _maxMessageSize)
            {
                throw new ArgumentException($"A {message.Payload.Length}-byte message exceeds the server's {_maxMessageSize}-byte limit.", nameof(messages));
            }
        }

        await _sendGate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfOver();

            // In requests of at most the server's maxMessagesPerSend, one after another, each numbered on from the last.
            for (var start = 0; start < messages.Count; start += MaxMessagesPerSend)
            {
                var count = Math.Min(MaxMessagesPerSend, messages.Count - start);
                var first = _sent + 1;
                var body = new ArrayBufferWriter<byte>();
                for (var i = 0; i < count; i++)
                {
                    DuplexFrameWriter.WriteClientMessage(body, Encoding, first + i, messages[start + i]);
                }

                var last = first + count - 1;
                await _client.Retry.ExecuteAsync(
                    async token => await PostAsync(body.WrittenMemory, last, token).ConfigureAwait(false),
                    cancellationToken).ConfigureAwait(false);
            }
        }
        catch (PollingDuplexException ex) when (ex.SessionEnded)
        {
            Fail(ex);
            throw;
        }
        finally
        {
            _sendGate.Release();
        }
    }

    /// <summary>Closes the session: stops polling and tells the server, which discards what was not delivered.</summary>
    /// <param name="cancellationToken">Gives up on telling the server; the session is closed here either way.</param>
    /// <returns>A task that completes when the session is closed.</returns>
    public async Task CloseAsync(CancellationToken cancellationToken = default)
    {
        if (Interlocked.CompareExchange(ref _state, (int)DuplexClientSessionState.Closed, (int)DuplexClientSessionState.Open) != (int)DuplexClientSessionState.Open)
        {
            return;
        }

        await StopPollingAsync().ConfigureAwait(false);
        _inbox.Writer.TryComplete();
        using var request = _client.CreateRequest(HttpMethod.Delete, _sessionUri, _token);
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(_client.Options.RequestTimeout);
        try
        {
            using var response = await _client.Http.SendAsync(request, timeout.Token).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is HttpRequestException or OperationCanceledException or IOException)
        {
            // The server will expire the session on its own.
        }
    }

    /// <summary>Drops the session at once, without telling the server, which expires it after its inactivity timeout.</summary>
    public void Abort()
    {
        if (Interlocked.CompareExchange(ref _state, (int)DuplexClientSessionState.Closed, (int)DuplexClientSessionState.Open) == (int)DuplexClientSessionState.Open)
        {
            _stopping.Cancel();
            _inbox.Writer.TryComplete();
        }
    }

    /// <summary>Closes the session (see <see cref="CloseAsync"/>), waiting at most the request timeout.</summary>
    /// <returns>A task that completes when the session is closed.</returns>
    public async ValueTask DisposeAsync()
    {
        await CloseAsync().ConfigureAwait(false);
        _stopping.Dispose();
        _sendGate.Dispose();
        _pollTimer?.Dispose();
    }

    internal void Start() => _pollLoop = Task.Run(PollLoopAsync);

    private async Task PollLoopAsync()
    {
        var token = _stopping.Token;
        while (!token.IsCancellationRequested)
        {
            try
            {
                await _client.Retry.ExecuteAsync(static async (session, ct) => await session.PollOnceAsync(ct).ConfigureAwait(false), this, token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (token.IsCancellationRequested)
            {
                return;
            }
            catch (PollingDuplexException ex)
            {
                Fail(ex);
                return;
            }
            catch (Exception ex) when (ex is TransientDuplexException or HttpRequestException or IOException or OperationCanceledException)
            {
                Fail(new PollingDuplexException($"Session {Id} lost its connection to the server and could not get it back in {_client.Options.MaxRetryAttempts} retries.", ex is TransientDuplexException ? ex.InnerException : ex));
                return;
            }
            catch (InvalidDataException ex)
            {
                Fail(new PollingDuplexException($"Session {Id} received frames that break the protocol: {ex.Message}", ex));
                return;
            }
        }
    }

    /// <summary>One poll: acknowledge what was handed over, then take the frames the server sends.</summary>
    private async Task PollOnceAsync(CancellationToken stopping)
    {
        using var request = _client.CreateRequest(HttpMethod.Get, new Uri($"{_sessionUri}/poll?ack={_delivered}"), _token);
        var timeout = ArmPollTimer(stopping);
        try
        {
            using var response = await _client.Http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, timeout.Token).ConfigureAwait(false);
            switch (response.StatusCode)
            {
                case HttpStatusCode.NoContent:
                    return;
                case HttpStatusCode.OK:
                    await ReadFramesAsync(response, timeout.Token).ConfigureAwait(false);
                    return;
                case HttpStatusCode.Conflict:
                    // Superseded by another poll of this session: there is nothing to do but poll on.
                    return;
                default:
                    throw await PollingDuplexClient.ToExceptionAsync(response, $"poll session {Id}", timeout.Token).ConfigureAwait(false);
            }
        }
        catch (OperationCanceledException ex) when (!stopping.IsCancellationRequested)
        {
            throw new TransientDuplexException(new TimeoutException($"A poll of session {Id} got no answer within {_pollTimeout}.", ex));
        }
    }

    /// <summary>Arms the poll's timeout, reusing the last poll's source unless it fired or <paramref name="stopping"/> is another token.</summary>
    private CancellationTokenSource ArmPollTimer(CancellationToken stopping)
    {
        if (_pollTimer is not { } timer || !timer.TryReset() || _pollTimerStopping != stopping)
        {
            _pollTimer?.Dispose();
            _pollTimer = timer = CancellationTokenSource.CreateLinkedTokenSource(stopping);
            _pollTimerStopping = stopping;
        }

        timer.CancelAfter(_pollTimeout);
        return timer;
    }

    private async Task ReadFramesAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        await using var stream = await response.Content.ReadAsStreamAsync(cancellationToken).ConfigureAwait(false);
        if (response.Content.Headers.ContentLength is { } length and <= WholeBodyLimit)
        {
            await ReadWholeBodyAsync(stream, (int)length, cancellationToken).ConfigureAwait(false);
            return;
        }

        var reader = PipeReader.Create(stream);
        try
        {
            while (true)
            {
                var result = await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                var buffer = result.Buffer;
                DuplexFrameReadStatus status;
                string? error;
                while ((status = DuplexFrameReader.TryRead(ref buffer, Encoding, fromServer: true, _maxMessageSize, result.IsCompleted, out var frame, out error)) == DuplexFrameReadStatus.Frame)
                {
                    await DeliverAsync(frame, cancellationToken).ConfigureAwait(false);
                }

                reader.AdvanceTo(buffer.Start, buffer.End);
                if (status is DuplexFrameReadStatus.Malformed or DuplexFrameReadStatus.TooLarge)
                {
                    throw new InvalidDataException(error);
                }

                if (result.IsCompleted)
                {
                    return;
                }
            }
        }
        finally
        {
            await reader.CompleteAsync().ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Reads a response whose length the server sent (every response it answered at once) in one read into a pooled
    /// buffer: no pipe, and no read past the end to find it. The frames' payloads are copied out, so the buffer goes back.
    /// </summary>
    private async Task ReadWholeBodyAsync(Stream stream, int length, CancellationToken cancellationToken)
    {
        var body = ArrayPool<byte>.Shared.Rent(length);
        try
        {
            await stream.ReadExactlyAsync(body.AsMemory(0, length), cancellationToken).ConfigureAwait(false);
            var buffer = new ReadOnlySequence<byte>(body, 0, length);
            DuplexFrameReadStatus status;
            string? error;
            while ((status = DuplexFrameReader.TryRead(ref buffer, Encoding, fromServer: true, _maxMessageSize, isFinalBlock: true, out var frame, out error)) == DuplexFrameReadStatus.Frame)
            {
                await DeliverAsync(frame, cancellationToken).ConfigureAwait(false);
            }

            if (status is DuplexFrameReadStatus.Malformed or DuplexFrameReadStatus.TooLarge)
            {
                throw new InvalidDataException(error);
            }
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(body);
        }
    }

    private async ValueTask DeliverAsync(DuplexFrame frame, CancellationToken cancellationToken)
    {
        if (frame.Sequence <= _delivered)
        {
            // Sent again because an earlier response was lost: the application already has it.
            return;
        }

        if (frame.Sequence != _delivered + 1)
        {
            throw new InvalidDataException($"expected sequence number {_delivered + 1}, got {frame.Sequence}");
        }

        await _inbox.Writer.WriteAsync(new DuplexDelivery(frame.Sequence, frame.Message, frame.Missed), cancellationToken).ConfigureAwait(false);
        Volatile.Write(ref _delivered, frame.Sequence);
    }

    private async Task PostAsync(ReadOnlyMemory<byte> body, long last, CancellationToken cancellationToken)
    {
        using var request = _client.CreateRequest(HttpMethod.Post, _messagesUri, _token);
        request.Content = new ReadOnlyMemoryContent(body);
        request.Content.Headers.ContentType = new MediaTypeHeaderValue(DuplexWire.ContentTypeOf(Encoding));
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(_client.Options.RequestTimeout);
        HttpResponseMessage response;
        try
        {
            response = await _client.Http.SendAsync(request, timeout.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException ex) when (!cancellationToken.IsCancellationRequested)
        {
            throw new TransientDuplexException(new TimeoutException($"A send on session {Id} got no answer within {_client.Options.RequestTimeout}.", ex));
        }

        using (response)
        {
            if (response.StatusCode is HttpStatusCode.OK or HttpStatusCode.UnprocessableContent or HttpStatusCode.Conflict or HttpStatusCode.Forbidden
                && response.Content.Headers.ContentType?.MediaType is "application/json" or DuplexWire.ProblemContentType)
            {
                // Every answer about sequence numbers says how far the server got; the next send starts after it.
                var received = await ReadReceivedAsync(response, timeout.Token).ConfigureAwait(false);
                if (received is { } r)
                {
                    _sent = r;
                }
            }

            if (response.StatusCode == HttpStatusCode.OK)
            {
                if (_sent < last)
                {
                    throw new PollingDuplexException(200, null, $"Session {Id}: the server acknowledged only up to {_sent} of {last}.");
                }

                return;
            }

            throw await PollingDuplexClient.ToExceptionAsync(response, $"send on session {Id}", timeout.Token).ConfigureAwait(false);
        }
    }

    private static async Task<long?> ReadReceivedAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        var bytes = await response.Content.ReadAsByteArrayAsync(cancellationToken).ConfigureAwait(false);
        using var json = JsonDocument.Parse(bytes);
        var value = json.RootElement.TryGetProperty("received", out var received) ? received.GetInt64() : (long?)null;

        // The problem body is consumed here; put it back so the caller can still read the error from it.
        response.Content = new ByteArrayContent(bytes) { Headers = { ContentType = response.Content.Headers.ContentType } };
        return value;
    }

    private void ThrowIfOver()
    {
        if (State != DuplexClientSessionState.Open)
        {
            throw Fault ?? new PollingDuplexException($"Session {Id} is closed.");
        }
    }

    private void Fail(Exception error)
    {
        if (Interlocked.CompareExchange(ref _fault, error, null) is null
            && Interlocked.CompareExchange(ref _state, (int)DuplexClientSessionState.Faulted, (int)DuplexClientSessionState.Open) == (int)DuplexClientSessionState.Open)
        {
            _inbox.Writer.TryComplete(error);
        }
    }

    private async Task StopPollingAsync()
    {
        await _stopping.CancelAsync().ConfigureAwait(false);
        try
        {
            await _pollLoop.ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
        }
    }
}
