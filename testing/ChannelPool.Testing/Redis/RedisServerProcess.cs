using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;

namespace ChannelPool.Testing.Redis;

/// <summary>
/// Test infrastructure, not product: a real redis-server on 127.0.0.1 on a port the OS chose, started and stopped by
/// its caller (a test or the perf console). Without persistence unless asked; with it (append-only, fsync on every
/// write), a hard kill loses nothing and a restart on the same port and folder brings everything back. As a shard of
/// a <see cref="RedisClusterProcess"/> it runs in cluster mode, its cluster state in its own folder.
/// </summary>
public sealed class RedisServerProcess : IAsyncDisposable
{
    /// <summary>Where the launcher looks for redis-server: Debian's package, which .ci/run installs.</summary>
    public const string Executable = "/usr/bin/redis-server";

    private readonly bool _persistent;
    private readonly int? _busPort;
    private readonly string? _folder;
    private Process? _process;

    private RedisServerProcess(int port, bool persistent, int? busPort)
    {
        Port = port;
        _persistent = persistent;
        _busPort = busPort;
        if (persistent || busPort is not null)
        {
            _folder = Directory.CreateTempSubdirectory("channelpool-redis-").FullName;
        }
    }

    /// <summary>
    /// Gets or sets what a start does, before it throws, when <see cref="Executable"/> is missing. A test project sets
    /// it to skip its Redis tests on such a machine (NUnit's <c>Assert.Ignore</c>) rather than fail them; the perf
    /// console leaves it unset, so its redis command fails with the message.
    /// </summary>
    public static Action<string>? WhenNotInstalled { get; set; }

    /// <summary>Gets whether <see cref="Executable"/> is there, for a test that skips itself without it.</summary>
    public static bool IsInstalled => File.Exists(Executable);

    /// <summary>Gets the port the server listens on, the same across <see cref="StartAgainAsync"/>.</summary>
    public int Port { get; }

    /// <summary>Gets the StackExchange.Redis configuration string that reaches the server.</summary>
    public string Configuration => $"127.0.0.1:{Port}";

    /// <summary>Starts a redis-server on a free port and waits until it accepts connections.</summary>
    /// <param name="persistent">Whether to keep data on disk (append-only, fsync always), so a kill and restart lose nothing.</param>
    /// <returns>The running server.</returns>
    /// <exception cref="InvalidOperationException">redis-server is not installed (after <see cref="WhenNotInstalled"/> ran).</exception>
    public static Task<RedisServerProcess> StartAsync(bool persistent = false) => StartAsync(persistent, cluster: false);

    /// <summary>Starts a server for a <see cref="RedisClusterProcess"/>: in cluster mode, with a cluster bus port of its own.</summary>
    internal static async Task<RedisServerProcess> StartAsync(bool persistent, bool cluster)
    {
        ThrowIfNotInstalled(Executable);
        var server = new RedisServerProcess(FreePort(), persistent, cluster ? FreePort() : null);
        try
        {
            await server.StartAgainAsync();
            return server;
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }
    }

    /// <summary>Starts the server again on the same port (and folder, when persistent), for example after <see cref="KillAsync"/>.</summary>
    /// <returns>A task that completes when the server accepts connections.</returns>
    public async Task StartAgainAsync()
    {
        // No snapshots ever ("--save" with nothing); the append-only file only when persistent.
        string[] storage = _persistent ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"];
        string[] folder = _folder is null ? [] : ["--dir", _folder];

        // A shard serves the slots it has when another is down, and tells a client where a moved slot lives.
        string[] cluster = _busPort is { } bus
            ? ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", bus.ToString(CultureInfo.InvariantCulture), "--cluster-require-full-coverage", "no", "--cluster-node-timeout", "3000"]
            : [];
        var start = new ProcessStartInfo(Executable, ["--port", Port.ToString(CultureInfo.InvariantCulture), "--bind", "127.0.0.1", "--save", string.Empty, .. storage, .. folder, .. cluster])
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
        };

        _process = Process.Start(start)!;

        // Read and drop its output, so a full pipe never blocks the server.
        _process.OutputDataReceived += (_, _) => { };
        _process.ErrorDataReceived += (_, _) => { };
        _process.BeginOutputReadLine();
        _process.BeginErrorReadLine();
        await Eventually.That(CanConnect, () => $"redis-server listens on port {Port}");
    }

    /// <summary>Kills the server at once, as a crash would.</summary>
    /// <returns>A task that completes when the process has exited.</returns>
    public async Task KillAsync()
    {
        if (_process is { HasExited: false } process)
        {
            process.Kill();
            await process.WaitForExitAsync();
        }
    }

    /// <summary>Kills the server and deletes its data folder, if it had one.</summary>
    /// <returns>A task that completes when the process has exited.</returns>
    public async ValueTask DisposeAsync()
    {
        await KillAsync();
        _process?.Dispose();
        if (_folder is not null)
        {
            Directory.Delete(_folder, recursive: true);
        }
    }

    /// <summary>Throws (after <see cref="WhenNotInstalled"/> ran) when <paramref name="executable"/>, part of Debian's redis-server package, is missing.</summary>
    internal static void ThrowIfNotInstalled(string executable)
    {
        if (!File.Exists(executable))
        {
            var missing = $"{executable} is not installed: apt-get install redis-server (.ci/run installs it).";
            WhenNotInstalled?.Invoke(missing);
            throw new InvalidOperationException(missing);
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
