using System.Net;
using System.Net.Sockets;

namespace ChannelPool.Perf.Scenarios.Balancing;

/// <summary>
/// A layer-4 balancer as one sits in front of a service's instances: each new connection goes to the next backend in
/// turn, and then every byte of it goes there for the connection's life. TLS passes through untouched. This is the
/// pinned-connection case: a pooled channel stays on the instance its connection first reached.
/// </summary>
internal sealed class RoundRobinTcpProxy : IAsyncDisposable
{
    private readonly TcpListener _listener = new(IPAddress.Loopback, 0);
    private readonly IPEndPoint[] _backends;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _accepting;
    private int _next = -1;

    public RoundRobinTcpProxy(IEnumerable<int> backendPorts)
    {
        _backends = [.. backendPorts.Select(port => new IPEndPoint(IPAddress.Loopback, port))];
        _listener.Start();
        Port = ((IPEndPoint)_listener.LocalEndpoint).Port;
        _accepting = AcceptAsync();
    }

    public int Port { get; }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        _listener.Stop();
        await _accepting.ConfigureAwait(false);
        _stop.Dispose();
    }

    private async Task AcceptAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            Socket client;
            try
            {
                client = await _listener.AcceptSocketAsync(_stop.Token).ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is OperationCanceledException or SocketException or ObjectDisposedException)
            {
                return;
            }

            var backend = _backends[(int)((uint)Interlocked.Increment(ref _next) % (uint)_backends.Length)];
            _ = RelayAsync(client, backend);
        }
    }

    private async Task RelayAsync(Socket client, IPEndPoint backend)
    {
        using var server = new Socket(SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        using (client)
        {
            client.NoDelay = true;
            try
            {
                await server.ConnectAsync(backend, _stop.Token).ConfigureAwait(false);
                await using var fromClient = new NetworkStream(client, ownsSocket: false);
                await using var toServer = new NetworkStream(server, ownsSocket: false);
                await Task.WhenAny(fromClient.CopyToAsync(toServer, _stop.Token), toServer.CopyToAsync(fromClient, _stop.Token)).ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is OperationCanceledException or SocketException or IOException or ObjectDisposedException)
            {
                // One connection's end; the others go on.
            }
        }
    }
}
