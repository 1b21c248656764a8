using System.Diagnostics;
using System.Net;
using System.Net.Sockets;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// A real redis-server on 127.0.0.1 on a port the OS chose, started by the test and stopped by it. Without persistence
/// unless asked; with it (append-only, fsync on every write), a hard kill loses nothing and a restart on the same
/// port and folder brings everything back.
/// </summary>
internal sealed class RedisServerProcess : IAsyncDisposable
{
    private readonly bool _persistent;
    private readonly string? _folder;
    private Process? _process;

    private RedisServerProcess(int port, bool persistent)
    {
        Port = port;
        _persistent = persistent;
        if (persistent)
        {
            _folder = Directory.CreateTempSubdirectory("channelpool-redis-").FullName;
        }
    }

    public int Port { get; }

    public string Configuration => $"127.0.0.1:{Port}";

    /// <summary>Starts a redis-server, or marks the test ignored when the machine has none (.ci/run installs it).</summary>
    public static async Task<RedisServerProcess> StartAsync(bool persistent = false)
    {
        if (!File.Exists("/usr/bin/redis-server"))
        {
            Assert.Ignore("redis-server is not installed (apt-get install redis-server; .ci/run installs it).");
        }

        var server = new RedisServerProcess(FreePort(), persistent);
        await server.StartAgainAsync();
        return server;
    }

    /// <summary>Starts the server again on the same port (and folder, when persistent).</summary>
    public async Task StartAgainAsync()
    {
        var start = new ProcessStartInfo("/usr/bin/redis-server") { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (var arg in new[] { "--port", Port.ToString(System.Globalization.CultureInfo.InvariantCulture), "--bind", "127.0.0.1", "--save", string.Empty })
        {
            start.ArgumentList.Add(arg);
        }

        if (_persistent)
        {
            foreach (var arg in new[] { "--appendonly", "yes", "--appendfsync", "always", "--dir", _folder! })
            {
                start.ArgumentList.Add(arg);
            }
        }
        else
        {
            start.ArgumentList.Add("--appendonly");
            start.ArgumentList.Add("no");
        }

        _process = Process.Start(start)!;
        _process.OutputDataReceived += (_, _) => { };
        _process.ErrorDataReceived += (_, _) => { };
        _process.BeginOutputReadLine();
        _process.BeginErrorReadLine();
        await Eventually.That(CanConnect, () => $"redis-server did not start listening on port {Port}");
    }

    /// <summary>Kills the server at once, as a crash would.</summary>
    public async Task KillAsync()
    {
        if (_process is { HasExited: false } process)
        {
            process.Kill();
            await process.WaitForExitAsync();
        }
    }

    public async ValueTask DisposeAsync()
    {
        await KillAsync();
        _process?.Dispose();
        if (_folder is not null)
        {
            Directory.Delete(_folder, recursive: true);
        }
    }

    private static int FreePort()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }

    private bool CanConnect()
    {
        try
        {
            using var client = new TcpClient();
            client.Connect(IPAddress.Loopback, Port);
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }
}
