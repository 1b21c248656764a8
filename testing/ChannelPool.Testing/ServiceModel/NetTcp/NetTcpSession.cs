using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel.Channels;

namespace ChannelPool.Testing.ServiceModel.NetTcp;

/// <summary>
/// One accepted connection and the sessions it carries, one after another: each is an [MC-NMF] duplex preamble, a TLS
/// upgrade, then request/reply envelopes until the client's end record (the connection may carry another) or the
/// connection's end.
/// </summary>
/// <remarks>
/// How a session's calls are served copies WCF's dispatcher (.NET Framework's <c>ChannelHandler</c> and
/// <c>ImmutableDispatchRuntime</c>, CoreWCF's <c>ConcurrencyBehavior</c>). With <see cref="ServiceConcurrency.Single"/>
/// a sessionful channel is not concurrent (<c>ConcurrencyBehavior.IsConcurrent</c> is false for <c>Single</c> with a
/// session), so its message pump receives the next message only once the current call has completed, reply sent
/// (<c>MessageRpc</c> resumes the pump, <c>EnsureReceive</c>, at the end of the call); the next request waits, unread, in
/// the connection. With <see cref="ServiceConcurrency.Multiple"/> the pump receives the next message as soon as the
/// call has started (<c>ProcessMessage41</c> calls <c>EnsureReceive</c> before invoking), and each reply is written when
/// its call completes. The per-session instance lock of <c>Single</c> (<c>LockInstance</c>) is implied here: one
/// session is one connection and one pump.
/// </remarks>
internal sealed class NetTcpSession
{
    private const int MaxViaBytes = 2048;
    /// <summary>The largest envelope a session accepts.</summary>
    public const int MaxMessageBytes = 1024 * 1024;
    private static readonly TimeSpan LingerForClose = TimeSpan.FromSeconds(2);

    private readonly Socket _socket;
    private readonly X509Certificate2 _certificate;
    private readonly ServerCounters _counters;
    private readonly Func<string, ServedContract?> _resolveVia;
    private readonly ServiceConcurrency _concurrency;
    private readonly BufferManager _buffers;
    private readonly Func<TimeSpan> _addedServiceTime;
    private readonly Lock _gate = new();
    private ConnectionState _state;
    private int _callsInProgress;

    /// <summary>Initializes a session over an accepted socket.</summary>
    /// <param name="socket">The accepted socket; the session owns it.</param>
    /// <param name="certificate">The server certificate for the TLS upgrade.</param>
    /// <param name="counters">Where the session counts its handshake, start, end and calls.</param>
    /// <param name="resolveVia">Maps a via to the contract served there, or <see langword="null"/> when none is.</param>
    /// <param name="concurrency">Whether a session's calls are served one at a time or at once.</param>
    /// <param name="buffers">The host's pool of message buffers, which every session shares.</param>
    /// <param name="addedServiceTime">What the host adds to every call's service time, read at each call.</param>
    public NetTcpSession(
        Socket socket, X509Certificate2 certificate, ServerCounters counters, Func<string, ServedContract?> resolveVia, ServiceConcurrency concurrency, BufferManager buffers, Func<TimeSpan> addedServiceTime)
    {
        _addedServiceTime = addedServiceTime;
        _buffers = buffers;
        _socket = socket;
        _certificate = certificate;
        _counters = counters;
        _resolveVia = resolveVia;
        _concurrency = concurrency;
    }

    /// <summary>Runs the connection to its end, one session after another; never throws.</summary>
    /// <param name="cancellationToken">Cancelled when the host stops.</param>
    /// <returns>A task that completes when the connection is closed.</returns>
    public async Task RunAsync(CancellationToken cancellationToken)
    {
        try
        {
            using var network = new NetworkStream(_socket, ownsSocket: false);

            // After a graceful end the client returns the raw connection to its pool and may start a new session
            // (new preamble, new TLS upgrade) on it, as [MC-NMF] allows: protocol-stream = duplex-stream+.
            while (await RunOneSessionAsync(network, cancellationToken).ConfigureAwait(false))
            {
            }
        }
        catch (Exception e) when (e is IOException or SocketException or ObjectDisposedException or OperationCanceledException
            or System.Security.Authentication.AuthenticationException or InvalidDataException or System.Xml.XmlException
            or System.ServiceModel.CommunicationException)
        {
            // The client went away, the host aborted the connection, or the bytes were not [MC-NMF]: the connection just ends.
        }
        finally
        {
            _socket.Dispose();
        }
    }

    private enum ConnectionState
    {
        /// <summary>Reading a preamble or upgrading: no session yet.</summary>
        Opening,

        /// <summary>A session is established.</summary>
        InSession,

        /// <summary>A session ended gracefully; the client holds the connection in its pool for the next session.</summary>
        BetweenSessions,

        /// <summary>The host aborted the connection.</summary>
        Aborted,
    }

    /// <summary>Closes the connection without an end record, as a server that goes away would.</summary>
    public void Abort()
    {
        lock (_gate)
        {
            _state = ConnectionState.Aborted;
        }

        AbortSocket();
    }

    /// <summary>
    /// Aborts the connection if it is idle: in a session with no call in progress, or between sessions (pooled by
    /// the client). A connection still opening its first session is left alone.
    /// </summary>
    /// <returns>Whether the connection was aborted.</returns>
    public bool AbortIfIdle()
    {
        lock (_gate)
        {
            bool idle = _state == ConnectionState.BetweenSessions || (_state == ConnectionState.InSession && _callsInProgress == 0);
            if (!idle)
            {
                return false;
            }

            _state = ConnectionState.Aborted;
        }

        AbortSocket();
        return true;
    }

    private bool TryMoveTo(ConnectionState next)
    {
        lock (_gate)
        {
            if (_state == ConnectionState.Aborted)
            {
                return false;
            }

            _state = next;
            return true;
        }
    }

    // A zero linger resets the connection: no end record, no TIME_WAIT that would hold the port after a stop.
    private void AbortSocket()
    {
        try
        {
            _socket.LingerState = new LingerOption(true, 0);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            // Already closed.
        }

        _socket.Dispose();
    }

    /// <returns>Whether the session ended with an exchange of end records, so the connection may carry another.</returns>
    private async Task<bool> RunOneSessionAsync(NetworkStream network, CancellationToken cancellationToken)
    {
        var contract = await ReadPreambleAsync(network, cancellationToken).ConfigureAwait(false);
        if (contract is null)
        {
            return false;
        }

        // Disposing sends nothing on the wire and leaves the raw connection open for the next session.
        using var tls = new SslStream(network, leaveInnerStreamOpen: true);
        await tls.AuthenticateAsServerAsync(
            new SslServerAuthenticationOptions { ServerCertificate = _certificate, ClientCertificateRequired = false },
            cancellationToken).ConfigureAwait(false);
        _counters.TlsHandshakeCompleted();

        var reader = new FramingReader(tls);
        if (await reader.TryReadByteAsync(cancellationToken).ConfigureAwait(false) != FramingRecords.PreambleEnd)
        {
            return false;
        }

        await FramingWriter.WritePreambleAckAsync(tls, cancellationToken).ConfigureAwait(false);
        if (!TryMoveTo(ConnectionState.InSession))
        {
            return false;
        }

        _counters.SessionStarted();
        bool graceful = false;
        try
        {
            graceful = await RunEnvelopesAsync(tls, reader, new TestServiceDispatcher(contract.Value, _counters, _addedServiceTime), cancellationToken).ConfigureAwait(false);
            return graceful && TryMoveTo(ConnectionState.BetweenSessions);
        }
        finally
        {
            _counters.SessionEnded();
        }
    }

    private async Task<ServedContract?> ReadPreambleAsync(NetworkStream network, CancellationToken cancellationToken)
    {
        // The client sends nothing after its upgrade request until it reads our upgrade response, so this reader
        // never holds TLS bytes when the stream is handed to SslStream.
        var reader = new FramingReader(network);
        int first = await reader.TryReadByteAsync(cancellationToken).ConfigureAwait(false);
        if (first < 0 || !TryMoveTo(ConnectionState.Opening))
        {
            return null;
        }

        if (first != FramingRecords.Version
            || await reader.ReadByteAsync(cancellationToken).ConfigureAwait(false) != FramingRecords.MajorVersion
            || await reader.ReadByteAsync(cancellationToken).ConfigureAwait(false) != FramingRecords.MinorVersion)
        {
            return await FaultAsync(network, FramingRecords.UnsupportedVersionFault, cancellationToken).ConfigureAwait(false);
        }

        if (await reader.ReadByteAsync(cancellationToken).ConfigureAwait(false) != FramingRecords.Mode
            || await reader.ReadByteAsync(cancellationToken).ConfigureAwait(false) != FramingRecords.DuplexMode)
        {
            return await FaultAsync(network, FramingRecords.UnsupportedModeFault, cancellationToken).ConfigureAwait(false);
        }

        if (await reader.ReadByteAsync(cancellationToken).ConfigureAwait(false) != FramingRecords.Via)
        {
            return null;
        }

        string? via = await reader.ReadStringAsync(MaxViaBytes, cancellationToken).ConfigureAwait(false);
        if (via is null)
        {
            return await FaultAsync(network, FramingRecords.ViaTooLongFault, cancellationToken).ConfigureAwait(false);
        }

        ServedContract? contract = _resolveVia(via);
        if (contract is null)
        {
            return await FaultAsync(network, FramingRecords.EndpointNotFoundFault, cancellationToken).ConfigureAwait(false);
        }

        if (await reader.ReadByteAsync(cancellationToken).ConfigureAwait(false) != FramingRecords.KnownEncoding
            || await reader.ReadByteAsync(cancellationToken).ConfigureAwait(false) != FramingRecords.BinarySessionEncoding)
        {
            return await FaultAsync(network, FramingRecords.ContentTypeInvalidFault, cancellationToken).ConfigureAwait(false);
        }

        // This host requires TLS, so a preamble end here (no upgrade) is refused like an unsupported upgrade.
        if (await reader.ReadByteAsync(cancellationToken).ConfigureAwait(false) != FramingRecords.UpgradeRequest
            || await reader.ReadStringAsync(MaxViaBytes, cancellationToken).ConfigureAwait(false) != FramingRecords.TlsUpgrade
            || reader.HasBufferedBytes)
        {
            return await FaultAsync(network, FramingRecords.UpgradeInvalidFault, cancellationToken).ConfigureAwait(false);
        }

        await FramingWriter.WriteUpgradeResponseAsync(network, cancellationToken).ConfigureAwait(false);
        return contract;
    }

    // Sends the fault, then waits for the client to close first: closing with its unread bytes pending would reset
    // the connection and could destroy the fault record before the client reads it.
    private static async Task<ServedContract?> FaultAsync(NetworkStream network, string fault, CancellationToken cancellationToken)
    {
        await FramingWriter.WriteFaultAsync(network, fault, cancellationToken).ConfigureAwait(false);
        await DrainUntilClientClosesAsync(network, cancellationToken).ConfigureAwait(false);
        return null;
    }

    private async Task<bool> RunEnvelopesAsync(SslStream tls, FramingReader reader, TestServiceDispatcher dispatcher, CancellationToken cancellationToken)
    {
        // The binary session encoder keeps one dictionary per direction, like the client's one encoder per channel: so
        // requests are decoded in arrival order on this loop, and replies encoded in sending order under the write lock.
        MessageEncoder encoder = new BinaryMessageEncodingBindingElement().CreateMessageEncoderFactory().CreateSessionEncoder();
        using var writing = new SemaphoreSlim(1, 1);
        var calls = new List<Task>();
        try
        {
            while (true)
            {
                int recordType = await reader.TryReadByteAsync(cancellationToken).ConfigureAwait(false);
                switch (recordType)
                {
                    case FramingRecords.SizedEnvelope:
                        int size = await reader.ReadSizeAsync(cancellationToken).ConfigureAwait(false);
                        if (size > MaxMessageBytes)
                        {
                            await FramingWriter.WriteFaultAsync(tls, FramingRecords.MaxMessageSizeExceededFault, cancellationToken).ConfigureAwait(false);
                            return false;
                        }

                        // The envelope is read into a pooled buffer the decoded message owns and gives back when it is
                        // closed, as WCF's SessionConnectionReader does: no array per message.
                        byte[] envelope = _buffers.TakeBuffer(size);
                        await reader.ReadExactlyAsync(envelope, size, cancellationToken).ConfigureAwait(false);
                        if (!TryBeginCall())
                        {
                            return false;
                        }

                        Message request;
                        try
                        {
                            request = encoder.ReadMessage(new ArraySegment<byte>(envelope, 0, size), _buffers, encoder.ContentType);
                        }
                        catch
                        {
                            EndCall();
                            throw;
                        }

                        Task call = ServeAsync(request, tls, dispatcher, encoder, writing, cancellationToken);
                        if (_concurrency == ServiceConcurrency.Single || call.IsCompleted)
                        {
                            // Single: the next message is read only once this call's reply is on the wire.
                            await call.ConfigureAwait(false);
                        }
                        else
                        {
                            calls.RemoveAll(c => c.IsCompletedSuccessfully);
                            calls.Add(call);
                        }

                        break;

                    case FramingRecords.End:
                        // The client closed its output session: answer its calls still running, then close ours; the
                        // connection stays open for the client's pool.
                        _counters.EndRecordReceived();
                        await Task.WhenAll(calls).ConfigureAwait(false);
                        await FramingWriter.WriteEndAsync(tls, cancellationToken).ConfigureAwait(false);
                        return true;

                    default:
                        // End of stream (-1) or a record a duplex session may not carry here: the session is over.
                        return false;
                }
            }
        }
        finally
        {
            // No call may write to the stream after the session is gone; a call that failed ended the connection, and
            // its error is the session's.
            await Task.WhenAll(calls).ConfigureAwait(false);
        }
    }

    /// <summary>Runs one call and writes its reply; a call that fails ends the connection, so the read loop stops too.</summary>
    private async Task ServeAsync(
        Message request, SslStream tls, TestServiceDispatcher dispatcher, MessageEncoder encoder, SemaphoreSlim writing, CancellationToken cancellationToken)
    {
        try
        {
            using Message reply = await dispatcher.DispatchAsync(request, cancellationToken).ConfigureAwait(false);
            await writing.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                // Encoded after room for the record's header, which then goes in front of it in the same buffer.
                ArraySegment<byte> encoded = encoder.WriteMessage(reply, MaxMessageBytes, _buffers, FramingRecords.MaxRecordHeaderBytes);
                await FramingWriter.WriteSizedEnvelopeAsync(tls, encoded, cancellationToken).ConfigureAwait(false);
                _buffers.ReturnBuffer(encoded.Array!);
            }
            finally
            {
                writing.Release();
            }
        }
        catch when (_concurrency == ServiceConcurrency.Multiple)
        {
            AbortSocket();
            throw;
        }
        finally
        {
            EndCall();
        }
    }

    private bool TryBeginCall()
    {
        int inProgress;
        lock (_gate)
        {
            if (_state == ConnectionState.Aborted)
            {
                return false;
            }

            inProgress = ++_callsInProgress;
        }

        _counters.SessionCallsInProgress(inProgress);
        return true;
    }

    private void EndCall()
    {
        lock (_gate)
        {
            _callsInProgress--;
        }
    }

    private static async Task DrainUntilClientClosesAsync(Stream stream, CancellationToken cancellationToken)
    {
        using var linger = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        linger.CancelAfter(LingerForClose);
        var scratch = new byte[256];
        try
        {
            while (await stream.ReadAsync(scratch, linger.Token).ConfigureAwait(false) > 0)
            {
                // Discard whatever the client still sends; only its close matters.
            }
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            // The client kept the connection open: close it anyway.
        }
    }
}
