using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;

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

    /// <summary>
    /// Raises this process's open-file limit as far as it may, before the server process starts (it inherits the limit):
    /// the soft limit to the hard one, which any process may do, and the hard one to the kernel's ceiling
    /// (<c>fs.nr_open</c>) where the process has the privilege. Thousands of clients are thousands of descriptors on each
    /// side, and a shell's default soft limit (often 1,024) caps a broadcast search long before the CPU does.
    /// </summary>
    public static void RaiseOpenFileLimit()
    {
        if (!OperatingSystem.IsLinux() || GetRLimit(RLimitNoFile, out var limit) != 0)
        {
            return;
        }

        // Raising the hard limit is allowed only with CAP_SYS_RESOURCE; without it the call fails and the hard limit stays.
        var ceiling = ReadNrOpen() ?? limit.Max;
        var raised = new RLimit { Current = ceiling, Max = ceiling };
        if (ceiling <= limit.Max || SetRLimit(RLimitNoFile, ref raised) != 0)
        {
            var soft = new RLimit { Current = limit.Max, Max = limit.Max };
            _ = SetRLimit(RLimitNoFile, ref soft);
        }
    }

    /// <summary>Reads this process's open-file limit (each client connection is a file descriptor): <see cref="long.MaxValue"/> when unlimited or unknown.</summary>
    public static long OpenFileLimit() =>
        OperatingSystem.IsLinux() && GetRLimit(RLimitNoFile, out var limit) == 0 && limit.Current < long.MaxValue ? (long)limit.Current : long.MaxValue;

    private const int RLimitNoFile = 7;

    private static ulong? ReadNrOpen()
    {
        try
        {
            return ulong.TryParse(File.ReadAllText("/proc/sys/fs/nr_open").Trim(), out var value) ? value : null;
        }
        catch (IOException)
        {
            return null;
        }
        catch (UnauthorizedAccessException)
        {
            return null;
        }
    }

    [DllImport("libc", EntryPoint = "getrlimit", SetLastError = true)]
    private static extern int GetRLimit(int resource, out RLimit limit);

    [DllImport("libc", EntryPoint = "setrlimit", SetLastError = true)]
    private static extern int SetRLimit(int resource, ref RLimit limit);

    [StructLayout(LayoutKind.Sequential)]
    private struct RLimit
    {
        public ulong Current;
        public ulong Max;
    }
}
