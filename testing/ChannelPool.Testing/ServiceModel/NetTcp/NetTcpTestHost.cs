using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using System.ServiceModel.Channels;

namespace ChannelPool.Testing.ServiceModel.NetTcp;

/// <summary>
/// Test infrastructure, not product: a minimal net.tcp server on 127.0.0.1 that speaks the .NET Message Framing
/// protocol [MC-NMF] with a TLS upgrade, so the unmodified WCF client opens real sessions against it. It serves
/// <see cref="IEchoService"/> at <c>/echo</c> and <see cref="ISessionCounter"/> at <c>/counter</c>, counts every
/// connection, handshake, session and call, and lets a test abort sessions or stop and restart on the same port. Each
/// session's calls are served one at a time or at once, as its <see cref="ServiceConcurrency"/> says and as WCF's
/// dispatcher does (see <see cref="NetTcpSession"/>).
/// </summary>
public sealed class NetTcpTestHost : IAsyncDisposable
{
    private readonly TcpListener _listener;
    private readonly X509Certificate2 _certificate;
    private readonly CancellationTokenSource _stopping = new();
    private readonly ConcurrentDictionary<NetTcpSession, Task> _sessions = new();

    // One pool of message buffers for the listener, as a WCF transport keeps one per channel listener, of its default
    // size (MaxBufferPoolSize, 512 KB): a request is read into a pooled buffer and a reply encoded into one.
    private readonly BufferManager _buffers = BufferManager.CreateBufferManager(512 * 1024, NetTcpSession.MaxMessageBytes);
    private readonly Task _acceptLoop;
    private int _stopped;

    private NetTcpTestHost(TcpListener listener, X509Certificate2 certificate, ServerCounters counters, ServiceConcurrency concurrency)
    {
        _listener = listener;
        _certificate = certificate;
        Counters = counters;
        Concurrency = concurrency;
        var local = (IPEndPoint)listener.LocalEndpoint;
        Port = local.Port;
        EchoAddress = new Uri($"net.tcp://{local.Address}:{Port}/echo");
        CounterAddress = new Uri($"net.tcp://{local.Address}:{Port}/counter");
        _acceptLoop = AcceptLoopAsync();
    }

    /// <summary>
    /// Gets or sets what the host adds to the service time of every call from now on, as an instance that has become
    /// slow would; zero by default.
    /// </summary>
    public TimeSpan AddedServiceTime { get; set; }

    /// <summary>
    /// Gets or sets whether the host serves a via naming another port, as an instance behind a layer-4 balancer sees
    /// the balancer's address in the via; false by default, when a via must name the host's own port.
    /// </summary>
    public bool ServesAnyPort { get; set; }

    /// <summary>Gets the port the host listens on.</summary>
    public int Port { get; }

    /// <summary>Gets the address of the <see cref="IEchoService"/> endpoint: <c>net.tcp://127.0.0.1:{port}/echo</c>.</summary>
    public Uri EchoAddress { get; }

    /// <summary>Gets the address of the <see cref="ISessionCounter"/> endpoint: <c>net.tcp://127.0.0.1:{port}/counter</c>.</summary>
    public Uri CounterAddress { get; }

    /// <summary>Gets what the host counts; the same instance that was passed to <see cref="StartAsync"/>, if one was.</summary>
    public ServerCounters Counters { get; }

    /// <summary>Gets how the host serves one session's calls: one at a time (WCF's defaults) or at once.</summary>
    public ServiceConcurrency Concurrency { get; }

    /// <summary>Gets the connections open right now, whether or not their session has started.</summary>
    public int ActiveConnections => _sessions.Count;

    /// <summary>Starts a host listening on 127.0.0.1.</summary>
    /// <param name="certificate">The TLS server certificate, for example from <see cref="TestCertificate.Create"/>.</param>
    /// <param name="port">The port, or 0 for a free one. A stopped host's port can be used again.</param>
    /// <param name="counters">Counters to keep adding to, so counts survive a restart; <see langword="null"/> for new ones.</param>
    /// <param name="concurrency">
    /// How one session's calls are served. <see cref="ServiceConcurrency.Multiple"/> (at once) by default, as the pool's
    /// tests were written against; <see cref="ServiceConcurrency.Single"/> serves them one at a time, as a WCF service
    /// with its default settings does.
    /// </param>
    /// <param name="listenAddress">
    /// The loopback address to listen on; 127.0.0.1 when null. Linux answers on all of 127.0.0.0/8, so hosts on
    /// 127.0.0.2 and 127.0.0.3 can share one port, as instances behind one DNS name do.
    /// </param>
    /// <param name="cancellationToken">Not observed after the listener is started; present for symmetry with other hosts.</param>
    /// <returns>The listening host.</returns>
    public static Task<NetTcpTestHost> StartAsync(
        X509Certificate2 certificate, int port = 0, ServerCounters? counters = null, ServiceConcurrency concurrency = ServiceConcurrency.Multiple, IPAddress? listenAddress = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        ArgumentOutOfRangeException.ThrowIfNegative(port);
        if (!Enum.IsDefined(concurrency))
        {
            throw new ArgumentOutOfRangeException(nameof(concurrency), concurrency, $"Serve sessions with {nameof(ServiceConcurrency.Single)} or {nameof(ServiceConcurrency.Multiple)}.");
        }

        cancellationToken.ThrowIfCancellationRequested();

        var listener = new TcpListener(listenAddress ?? IPAddress.Loopback, port);
        listener.Start();
        return Task.FromResult(new NetTcpTestHost(listener, certificate, counters ?? new ServerCounters(), concurrency));
    }

    /// <summary>Creates the binding clients use: net.tcp with TLS transport security and no client credential.</summary>
    /// <returns>A new binding.</returns>
    public static NetTcpBinding CreateBinding()
    {
        var binding = new NetTcpBinding(SecurityMode.Transport);
        binding.Security.Transport.ClientCredentialType = TcpClientCredentialType.None;
        return binding;
    }

    /// <summary>
    /// Creates an endpoint address whose DNS identity is the certificate's name, so the client's identity check matches
    /// the test certificate although the address is an IP.
    /// </summary>
    /// <param name="uri">One of the host's addresses.</param>
    /// <returns>The endpoint address.</returns>
    public static EndpointAddress CreateAddress(Uri uri) => new(uri, new DnsEndpointIdentity(TestCertificate.DnsName));

    /// <summary>
    /// Aborts, from the server side, every established session with no call in progress: the socket is closed with no
    /// end record, as when a server or a middlebox drops an idle connection.
    /// </summary>
    /// <returns>How many sessions were aborted.</returns>
    public int AbortIdleSessions() => _sessions.Keys.Count(session => session.AbortIfIdle());

    /// <summary>
    /// Stops listening and aborts every connection, as a server going down would. Afterwards a new host can be started
    /// on the same port.
    /// </summary>
    /// <returns>A task that completes when the listener and every connection are closed.</returns>
    public async Task StopAsync()
    {
        if (Interlocked.Exchange(ref _stopped, 1) == 1)
        {
            await _acceptLoop.ConfigureAwait(false);
            return;
        }

        _listener.Stop();
        await _acceptLoop.ConfigureAwait(false);

        // Abort (reset) before cancelling: a cancelled session would close its socket gracefully first.
        foreach (NetTcpSession session in _sessions.Keys)
        {
            session.Abort();
        }

        await _stopping.CancelAsync().ConfigureAwait(false);
        await Task.WhenAll(_sessions.Values).ConfigureAwait(false);
        _stopping.Dispose();
    }

    /// <inheritdoc cref="StopAsync"/>
    public async ValueTask DisposeAsync() => await StopAsync().ConfigureAwait(false);

    private async Task AcceptLoopAsync()
    {
        // Let the constructor return before the first accept.
        await Task.Yield();
        while (true)
        {
            Socket socket;
            try
            {
                socket = await _listener.AcceptSocketAsync(_stopping.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is OperationCanceledException or SocketException or ObjectDisposedException or InvalidOperationException)
            {
                // InvalidOperationException: StopAsync stopped the listener before this loop's first accept.
                return;
            }

            Counters.ConnectionAccepted();
            socket.NoDelay = true;
            var session = new NetTcpSession(socket, _certificate, Counters, ResolveVia, Concurrency, _buffers, () => AddedServiceTime);
            var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

            // Registered before it runs, so ActiveConnections and StopAsync see it from the first byte.
            _sessions[session] = RunSessionAsync(session, started.Task);
            started.SetResult();
        }
    }

    private async Task RunSessionAsync(NetTcpSession session, Task registered)
    {
        await registered.ConfigureAwait(false);
        await session.RunAsync(_stopping.Token).ConfigureAwait(false);
        _sessions.TryRemove(session, out _);
    }

    private ServedContract? ResolveVia(string via)
    {
        if (!Uri.TryCreate(via, UriKind.Absolute, out Uri? uri) || uri.Scheme != "net.tcp" || (uri.Port != Port && !ServesAnyPort))
        {
            return null;
        }

        return uri.AbsolutePath switch
        {
            "/echo" => ServedContract.Echo,
            "/counter" => ServedContract.Counter,
            _ => null,
        };
    }
}
