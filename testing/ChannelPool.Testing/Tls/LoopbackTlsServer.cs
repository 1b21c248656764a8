using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using System.Text;

namespace ChannelPool.Testing.Tls;

/// <summary>
/// Test infrastructure, not product: a TLS echo server on 127.0.0.1. Every connection performs a full TLS handshake,
/// then echoes lines back. It counts handshakes, open connections and graceful closes, so a test (or a sample) can see
/// when the expensive part happens.
/// </summary>
public sealed class LoopbackTlsServer : IAsyncDisposable
{
    private readonly TcpListener _listener;
    private readonly CancellationTokenSource _stop = new();
    private readonly List<Task> _connections = [];
    private readonly Task _acceptLoop;
    private int _handshakes;
    private int _openConnections;
    private int _gracefulCloses;

    private LoopbackTlsServer(X509Certificate2 certificate, int port)
    {
        Certificate = certificate;
        _listener = new TcpListener(IPAddress.Loopback, port);
        _listener.Server.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
        _listener.Start();
        EndPoint = (IPEndPoint)_listener.LocalEndpoint;
        _acceptLoop = AcceptLoopAsync();
    }

    /// <summary>Gets the address the server listens on.</summary>
    public IPEndPoint EndPoint { get; }

    /// <summary>Gets the server's certificate; clients trust exactly this one.</summary>
    public X509Certificate2 Certificate { get; }

    /// <summary>Gets how many TLS handshakes the server has completed.</summary>
    public int Handshakes => Volatile.Read(ref _handshakes);

    /// <summary>Gets how many connections are open now.</summary>
    public int OpenConnections => Volatile.Read(ref _openConnections);

    /// <summary>Gets how many connections ended with the client's TLS close_notify rather than a reset.</summary>
    public int GracefulCloses => Volatile.Read(ref _gracefulCloses);

    /// <summary>
    /// Waits (up to five seconds) until the server has completed <paramref name="count"/> handshakes. In TLS 1.3 the
    /// client finishes its handshake before the server does, so a client-side "opened" can be a moment ahead.
    /// </summary>
    /// <param name="count">The total to wait for.</param>
    /// <returns>A task that completes when the count is reached or the wait gives up.</returns>
    public async Task WaitForHandshakesAsync(int count)
    {
        var deadline = DateTime.UtcNow.AddSeconds(5);
        while (Handshakes < count && DateTime.UtcNow < deadline)
        {
            await Task.Delay(1);
        }
    }

    /// <summary>Starts a server on a free port with a newly generated certificate.</summary>
    /// <returns>The running server.</returns>
    public static LoopbackTlsServer Start() => new(TestCertificate.CreateEcdsa(), port: 0);

    /// <summary>Starts a server on <paramref name="port"/> with <paramref name="certificate"/>, for example to bring a stopped server back.</summary>
    /// <param name="certificate">The certificate to present.</param>
    /// <param name="port">The port to listen on.</param>
    /// <returns>The running server.</returns>
    public static LoopbackTlsServer Start(X509Certificate2 certificate, int port) => new(certificate, port);

    /// <summary>Stops listening and drops every connection, as a crashed server would.</summary>
    /// <returns>A task that completes when every connection is gone.</returns>
    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        _listener.Stop();
        await _acceptLoop;
        Task[] connections;
        lock (_connections)
        {
            connections = [.. _connections];
        }

        await Task.WhenAll(connections);
        _stop.Dispose();
    }

    private async Task AcceptLoopAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            TcpClient client;
            try
            {
                client = await _listener.AcceptTcpClientAsync(_stop.Token);
            }
            catch (Exception ex) when (ex is OperationCanceledException or SocketException or ObjectDisposedException)
            {
                return;
            }

            var connection = ServeAsync(client);
            lock (_connections)
            {
                _connections.RemoveAll(t => t.IsCompleted);
                _connections.Add(connection);
            }
        }
    }

    private async Task ServeAsync(TcpClient client)
    {
        Interlocked.Increment(ref _openConnections);
        try
        {
            // As a real server does: TLS 1.3 sends its session tickets in records of their own after the handshake, and
            // with Nagle's algorithm on, the next small write (an echo) would wait for the client's delayed ACK.
            client.NoDelay = true;
            using (client)
            await using (var tls = new SslStream(client.GetStream(), leaveInnerStreamOpen: false))
            {
                // No resumption: every connection costs a full handshake, as a fresh secure session does.
                await tls.AuthenticateAsServerAsync(
                    new SslServerAuthenticationOptions
                    {
                        ServerCertificate = Certificate,
                        ClientCertificateRequired = false,
                        AllowTlsResume = false,
                    },
                    _stop.Token);
                Interlocked.Increment(ref _handshakes);

                using var reader = new StreamReader(tls, Encoding.UTF8, detectEncodingFromByteOrderMarks: false, leaveOpen: true);
                await using var writer = new StreamWriter(tls, new UTF8Encoding(false), leaveOpen: true) { AutoFlush = true };
                while (await reader.ReadLineAsync(_stop.Token) is { } line)
                {
                    await writer.WriteLineAsync(line.AsMemory(), _stop.Token);
                }

                // ReadLine returned null: the client sent close_notify (or closed the socket) at a message boundary.
                Interlocked.Increment(ref _gracefulCloses);
            }
        }
        catch (Exception ex) when (ex is IOException or OperationCanceledException or ObjectDisposedException or System.Security.Authentication.AuthenticationException)
        {
            // A dropped or refused connection: nothing to do but forget it.
        }
        finally
        {
            Interlocked.Decrement(ref _openConnections);
        }
    }
}
