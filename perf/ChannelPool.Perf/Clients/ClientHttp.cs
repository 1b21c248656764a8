using System.Net;
using System.Net.Sockets;

namespace ChannelPool.Perf.Clients;

/// <summary>
/// The one HTTP handler all simulated clients share. It has no hidden caps (seed 001's lesson: connection limits and
/// proxy detection silently throttled the original's clients), and it spreads connections to a loopback server over
/// several local addresses (127.0.0.1, 127.0.0.2, …), so thousands of clients do not run out of ephemeral ports.
/// </summary>
internal static class ClientHttp
{
    public static SocketsHttpHandler CreateHandler(int loopbackAddresses)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(loopbackAddresses, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(loopbackAddresses, 254);
        var next = -1;
        return new SocketsHttpHandler
        {
            UseProxy = false,
            UseCookies = false,
            AutomaticDecompression = DecompressionMethods.None,
            MaxConnectionsPerServer = int.MaxValue,
            PooledConnectionIdleTimeout = TimeSpan.FromMinutes(10),
            PooledConnectionLifetime = Timeout.InfiniteTimeSpan,
            ConnectTimeout = TimeSpan.FromSeconds(30),
            ConnectCallback = async (context, cancellationToken) =>
            {
                var socket = new Socket(SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
                try
                {
                    var target = context.DnsEndPoint;
                    if (loopbackAddresses > 1 && IPAddress.TryParse(target.Host, out var address) && address.Equals(IPAddress.Loopback))
                    {
                        // 127.0.0.0/8 is all loopback on Linux: each local address has its own range of ephemeral ports.
                        var local = (uint)(Interlocked.Increment(ref next) % loopbackAddresses) + 1;
                        socket.Bind(new IPEndPoint(new IPAddress([127, 0, 0, (byte)local]), 0));
                    }

                    await socket.ConnectAsync(target, cancellationToken);
                    return new NetworkStream(socket, ownsSocket: true);
                }
                catch
                {
                    socket.Dispose();
                    throw;
                }
            },
        };
    }

    /// <summary>Reads this process's open-file limit (each client connection is a file descriptor).</summary>
    public static long OpenFileLimit()
    {
        try
        {
            foreach (var line in File.ReadLines("/proc/self/limits"))
            {
                if (line.StartsWith("Max open files", StringComparison.Ordinal))
                {
                    var fields = line["Max open files".Length..].Split(' ', StringSplitOptions.RemoveEmptyEntries);
                    return long.TryParse(fields[0], out var soft) ? soft : long.MaxValue;
                }
            }
        }
        catch (IOException)
        {
        }
        catch (UnauthorizedAccessException)
        {
        }

        return long.MaxValue;
    }
}
