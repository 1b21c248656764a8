using ChannelPool.Perf.Clients;
using Microsoft.AspNetCore.SignalR;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>
/// One simulated SignalR client speaking the JSON hub protocol over a transport the subclass provides. A receive loop
/// cuts what arrives into records, hands notifications to the application in order and completes invocations; sends
/// go one at a time. There is no thread, timer or buffer per client while it is idle.
/// </summary>
internal abstract class SignalRClient : IPubSubClient
{
    /// <summary>How long <see cref="DisposeAsync"/> waits for the server to acknowledge the close.</summary>
    protected static readonly TimeSpan CloseTimeout = TimeSpan.FromSeconds(5);

    private readonly NotificationHandler _onNotification;
    private readonly SignalRKeepAlive? _keepAlive;
    private readonly HubRecordBuffer _received = new();
    private readonly SemaphoreSlim _sendGate = new(1, 1);
    private readonly Lock _gate = new();
    private readonly Dictionary<long, TaskCompletionSource> _invocations = [];
    private readonly TaskCompletionSource _handshake = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _stopping = new();
    private Task _receiveLoop = Task.CompletedTask;
    private long _lastInvocationId;
    private long _lastSentTicks = Environment.TickCount64;
    private Exception? _ended;
    private int _disposed;

    /// <summary>Initializes a client for a negotiated connection.</summary>
    /// <param name="connectionId">The connection's public id, for messages.</param>
    /// <param name="onNotification">Receives every notification's data.</param>
    /// <param name="keepAlive">Pings the server while the client is silent; none where the transport keeps itself alive.</param>
    protected SignalRClient(string connectionId, NotificationHandler onNotification, SignalRKeepAlive? keepAlive)
    {
        ConnectionId = connectionId;
        _onNotification = onNotification;
        _keepAlive = keepAlive;
    }

    /// <summary>Gets the connection's public id (not the token that addresses it).</summary>
    public string ConnectionId { get; }

    /// <summary>
    /// Gets why the connection ended: <see langword="null"/> while it is up; an <see cref="IOException"/> when the server
    /// closed it or it was lost; an <see cref="ObjectDisposedException"/> once the client is disposed.
    /// </summary>
    public Exception? EndReason => Volatile.Read(ref _ended);

    /// <summary>Gets when the client last sent something, in <see cref="Environment.TickCount64"/> milliseconds.</summary>
    public long LastSentTicks => Volatile.Read(ref _lastSentTicks);

    /// <inheritdoc/>
    public Task SubscribeAsync(string topic, CancellationToken cancellationToken) =>
        InvokeAsync("Subscribe", topic, data: null, cancellationToken);

    /// <inheritdoc/>
    public Task PublishAsync(string topic, ReadOnlyMemory<byte> data, CancellationToken cancellationToken) =>
        InvokeAsync("Publish", topic, data, cancellationToken);

    /// <summary>Opens the transport, starts receiving and completes the handshake.</summary>
    /// <param name="cancellationToken">Cancels the start; the caller then disposes the client.</param>
    /// <returns>A task that completes when the server has accepted the handshake.</returns>
    /// <exception cref="HubException">The server refused the handshake; the message is the server's.</exception>
    public async Task StartAsync(CancellationToken cancellationToken)
    {
        await OpenAsync(cancellationToken).ConfigureAwait(false);
        _receiveLoop = RunReceiveLoopAsync();
        await SendAsync(HubMessageWriter.Handshake, cancellationToken).ConfigureAwait(false);
        await _handshake.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
        lock (_gate)
        {
            // Under the lock with End, so a connection that ends at once is never left in the keep-alive.
            if (_ended is null)
            {
                _keepAlive?.Add(this);
            }
        }
    }

    /// <summary>
    /// Sends a ping if nothing was sent for <paramref name="interval"/> and no send is under way, as SignalR's own clients
    /// do. Returns at once; the ping goes on in the background.
    /// </summary>
    /// <param name="now">The current <see cref="Environment.TickCount64"/>.</param>
    /// <param name="interval">The longest silence.</param>
    public void PingIfIdle(long now, TimeSpan interval)
    {
        if (now - LastSentTicks < (long)interval.TotalMilliseconds || EndReason is not null || !_sendGate.Wait(0))
        {
            return;
        }

        _ = PingAsync();
    }

    /// <summary>Ends the connection politely (the subclass tells the server) and stops receiving. Never throws.</summary>
    /// <returns>A task that completes when the client is closed.</returns>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        End(new ObjectDisposedException(GetType().Name, $"SignalR connection {ConnectionId} was disposed."));
        try
        {
            using var timeout = new CancellationTokenSource(CloseTimeout);
            await CloseAsync(timeout.Token).ConfigureAwait(false);
            await _receiveLoop.WaitAsync(timeout.Token).ConfigureAwait(false);
        }
        catch (Exception)
        {
            // Disposal never throws. The server forgets the connection on its own (long polling after its disconnect
            // timeout, a WebSocket when the socket is aborted below).
        }

        await _stopping.CancelAsync().ConfigureAwait(false);
        await _receiveLoop.ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        DisposeTransport();
        _stopping.Dispose();
    }

    /// <summary>Opens the transport: the first poll, or the WebSocket.</summary>
    /// <param name="cancellationToken">Cancels the open.</param>
    /// <returns>A task that completes when the transport can send and receive.</returns>
    protected abstract Task OpenAsync(CancellationToken cancellationToken);

    /// <summary>
    /// Reads from the transport into <paramref name="received"/> and calls <see cref="DispatchReceived"/> after each read,
    /// until the server ends the connection, <see cref="DispatchReceived"/> returns <see langword="false"/>, or
    /// <paramref name="stopping"/> fires. Throws <see cref="IOException"/> to say why the connection ended.
    /// </summary>
    /// <param name="received">The buffer to read into.</param>
    /// <param name="stopping">Fires when the client is disposed.</param>
    /// <returns>A task that completes when the connection has ended.</returns>
    protected abstract Task ReceiveAsync(HubRecordBuffer received, CancellationToken stopping);

    /// <summary>Sends whole records; never called twice at once.</summary>
    /// <param name="records">One or more records, each ended by the separator.</param>
    /// <param name="cancellationToken">Cancels the send.</param>
    /// <returns>A task that completes when the transport has taken the records.</returns>
    protected abstract ValueTask SendRecordsAsync(ReadOnlyMemory<byte> records, CancellationToken cancellationToken);

    /// <summary>Tells the server the client is leaving: a DELETE, or a WebSocket close.</summary>
    /// <param name="cancellationToken">Gives up.</param>
    /// <returns>A task that completes when the server was told.</returns>
    protected abstract Task CloseAsync(CancellationToken cancellationToken);

    /// <summary>Releases the transport after the receive loop has ended.</summary>
    protected abstract void DisposeTransport();

    /// <summary>Whether <paramref name="ex"/> is the kind of failure a lost connection or a disposed client causes.</summary>
    /// <param name="ex">The exception.</param>
    /// <returns><see langword="true"/> for I/O, HTTP, WebSocket, cancellation and disposal failures.</returns>
    private static bool IsConnectionFailure(Exception ex) =>
        ex is IOException or HttpRequestException or System.Net.WebSockets.WebSocketException or OperationCanceledException or ObjectDisposedException or TimeoutException;

    /// <summary>Takes every whole record received: the handshake response first, then hub messages.</summary>
    /// <returns><see langword="false"/> once the connection has ended (a close message or a refused handshake).</returns>
    protected bool DispatchReceived()
    {
        while (_received.TryTake(out var record))
        {
            var message = HubMessage.Parse(record);
            if (!_handshake.Task.IsCompleted)
            {
                if (message.Error is not null)
                {
                    End(new HubException($"The server refused the handshake: {message.Error}"));
                    return false;
                }

                _handshake.TrySetResult();
                continue;
            }

            switch (message.Type)
            {
                case HubMessageType.Invocation when message.IsNotification:
                    _onNotification(message.NotificationData);
                    break;
                case HubMessageType.Completion:
                    Complete(message.InvocationId, message.Error);
                    break;
                case HubMessageType.Close:
                    End(new IOException(message.Error is null
                        ? $"The server closed SignalR connection {ConnectionId}."
                        : $"The server closed SignalR connection {ConnectionId}: {message.Error}"));
                    return false;
                default:
                    // Pings, and anything a pub/sub client has no use for.
                    break;
            }
        }

        _received.ReleaseIfEmpty();
        return true;
    }

    private async Task InvokeAsync(string target, string topic, ReadOnlyMemory<byte>? data, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(topic);
        var completion = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        long id;
        lock (_gate)
        {
            ThrowIfEnded();
            id = ++_lastInvocationId;
            _invocations.Add(id, completion);
        }

        try
        {
            using (var message = HubMessageWriter.WriteInvocation(id, target, topic, data))
            {
                await SendAsync(message.Written, cancellationToken).ConfigureAwait(false);
            }

            await completion.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            lock (_gate)
            {
                _invocations.Remove(id);
            }
        }
    }

    private async Task SendAsync(ReadOnlyMemory<byte> records, CancellationToken cancellationToken)
    {
        await _sendGate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfEnded();
            Volatile.Write(ref _lastSentTicks, Environment.TickCount64);
            await SendRecordsAsync(records, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (!cancellationToken.IsCancellationRequested && IsConnectionFailure(ex) && ex is not (IOException or ObjectDisposedException))
        {
            // One exception type for a broken connection, whatever the transport: an aborted WebSocket reports a
            // cancellation nobody asked for, a refused POST an HttpRequestException.
            throw new IOException($"Sending on SignalR connection {ConnectionId} failed: {ex.Message}", ex);
        }
        finally
        {
            _sendGate.Release();
        }
    }

    // Called with the send gate held.
    private async Task PingAsync()
    {
        try
        {
            Volatile.Write(ref _lastSentTicks, Environment.TickCount64);
            await SendRecordsAsync(HubMessageWriter.Ping, _stopping.Token).ConfigureAwait(false);
        }
        catch (Exception ex) when (IsConnectionFailure(ex))
        {
            // A dead connection ends the receive loop, which fails the client's calls; the ping has no one to tell.
        }
        finally
        {
            _sendGate.Release();
        }
    }

    private async Task RunReceiveLoopAsync()
    {
        Exception reason;
        try
        {
            await ReceiveAsync(_received, _stopping.Token).ConfigureAwait(false);
            reason = new IOException($"The server ended SignalR connection {ConnectionId}.");
        }
        catch (Exception ex) when (ex is IOException or HubException)
        {
            reason = ex;
        }
        catch (Exception ex)
        {
            // Whatever ended the loop (a lost connection, a malformed message, a throwing notification handler) must
            // fail the pending calls rather than leave them waiting forever.
            reason = new IOException($"SignalR connection {ConnectionId} was lost: {ex.Message}", ex);
        }
        finally
        {
            _received.Release();
        }

        // No-op when a close message, a refused handshake or DisposeAsync ended the client first.
        End(reason);
    }

    private void Complete(long invocationId, string? error)
    {
        TaskCompletionSource? completion;
        lock (_gate)
        {
            _invocations.Remove(invocationId, out completion);
        }

        if (error is null)
        {
            completion?.TrySetResult();
        }
        else
        {
            completion?.TrySetException(new HubException(error));
        }
    }

    private void End(Exception reason)
    {
        TaskCompletionSource[] pending;
        lock (_gate)
        {
            if (_ended is not null)
            {
                return;
            }

            _ended = reason;
            pending = [.. _invocations.Values];
            _invocations.Clear();
            _keepAlive?.Remove(this);
        }

        _handshake.TrySetException(reason);
        foreach (var completion in pending)
        {
            completion.TrySetException(reason);
        }
    }

    private void ThrowIfEnded()
    {
        var ended = EndReason;
        if (ended is ObjectDisposedException)
        {
            throw new ObjectDisposedException(GetType().Name, ended.Message);
        }

        if (ended is not null)
        {
            throw new IOException(ended.Message, ended);
        }
    }
}
