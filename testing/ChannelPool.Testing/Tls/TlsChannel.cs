using System.Net.Security;
using System.Net.Sockets;
using System.Text;

namespace ChannelPool.Testing.Tls;

/// <summary>
/// Test infrastructure, not product: one TLS connection to <see cref="LoopbackTlsServer"/>, a real channel for the pool.
/// Expensive to open (a handshake), cheap to call on.
/// </summary>
/// <remarks>Not thread-safe: one call at a time, which is exactly what a pool lease guarantees.</remarks>
public sealed class TlsChannel : IDisposable
{
    private readonly TcpClient _client;
    private readonly SslStream _tls;
    private readonly StreamReader _reader;
    private readonly StreamWriter _writer;
    private volatile bool _faulted;

    internal TlsChannel(TcpClient client, SslStream tls)
    {
        _client = client;
        _tls = tls;
        _reader = new StreamReader(tls, Encoding.UTF8, detectEncodingFromByteOrderMarks: false, leaveOpen: true);
        _writer = new StreamWriter(tls, new UTF8Encoding(false), leaveOpen: true) { AutoFlush = true };
    }

    /// <summary>Gets whether a call on this channel failed, leaving it unusable.</summary>
    public bool IsFaulted => _faulted;

    /// <summary>
    /// Gets whether the channel can still carry calls: no call on it failed, and the server has not closed the
    /// connection. The second part is a zero-timeout poll of the socket, so a pool notices a restarted server before
    /// handing the dead channel to a caller.
    /// </summary>
    public bool IsUsable => !_faulted && !PeerHasClosed();

    /// <summary>Sends <paramref name="message"/> and returns the server's echo.</summary>
    /// <param name="message">One line of text.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The echoed line.</returns>
    /// <exception cref="IOException">The connection failed; the channel is now faulted.</exception>
    public async Task<string> EchoAsync(string message, CancellationToken cancellationToken = default)
    {
        try
        {
            await _writer.WriteLineAsync(message.AsMemory(), cancellationToken);
            return await _reader.ReadLineAsync(cancellationToken) ?? throw new IOException("The server closed the connection.");
        }
        catch
        {
            _faulted = true;
            throw;
        }
    }

    private bool PeerHasClosed()
    {
        try
        {
            // Readable with nothing to read means the peer sent FIN (or reset); unread data means it is alive.
            var socket = _client.Client;
            return socket.Poll(0, SelectMode.SelectRead) && socket.Available == 0;
        }
        catch (Exception ex) when (ex is ObjectDisposedException or SocketException)
        {
            return true;
        }
    }

    /// <summary>Ends the session politely: TLS close_notify, then the socket.</summary>
    /// <param name="cancellationToken">Gives up on the goodbye; the socket is closed either way.</param>
    /// <returns>A task that completes when the connection is closed.</returns>
    public async Task CloseAsync(CancellationToken cancellationToken = default)
    {
        try
        {
            await _tls.ShutdownAsync().WaitAsync(cancellationToken);
        }
        finally
        {
            Dispose();
        }
    }

    /// <summary>Drops the connection at once, without a goodbye. Never blocks and never throws.</summary>
    public void Dispose()
    {
        _faulted = true;

        // Closing the socket first makes anything still reading or writing fail fast; the writer holds no data
        // (AutoFlush), so neither it nor the reader needs disposing.
        _client.Dispose();
        _tls.Dispose();
    }
}
