using System.Diagnostics;
using System.Globalization;

namespace ChannelPool.Testing.Redis;

/// <summary>
/// Test infrastructure, not product: a Redis Cluster of three (or more) masters, each a Debian redis-server on
/// 127.0.0.1 on a port of its own, joined with <c>redis-cli --cluster create</c> and no replicas. A shard can be killed
/// and started again on the same port and folder; with persistence it comes back with its data, and the others serve
/// their slots meanwhile.
/// </summary>
public sealed class RedisClusterProcess : IAsyncDisposable
{
    /// <summary>Where the cluster tool is: Debian's redis-server package brings it (redis-tools).</summary>
    public const string Cli = "/usr/bin/redis-cli";

    private RedisClusterProcess(List<RedisServerProcess> shards) => Shards = shards;

    /// <summary>Gets the masters, in the order the cluster was created with them.</summary>
    public IReadOnlyList<RedisServerProcess> Shards { get; }

    /// <summary>Gets the StackExchange.Redis configuration string naming every master; the client discovers the slots.</summary>
    public string Configuration => string.Join(',', Shards.Select(s => s.Configuration));

    /// <summary>Starts <paramref name="masters"/> servers in cluster mode, creates the cluster and waits until every slot is served.</summary>
    /// <param name="masters">How many masters, at least 3 (what <c>redis-cli --cluster create</c> asks for).</param>
    /// <param name="persistent">Whether each shard keeps its data on disk, so a killed shard comes back with it.</param>
    /// <returns>The running cluster.</returns>
    public static async Task<RedisClusterProcess> StartAsync(int masters = 3, bool persistent = false)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(masters, 3);
        RedisServerProcess.ThrowIfNotInstalled(RedisServerProcess.Executable);
        RedisServerProcess.ThrowIfNotInstalled(Cli);
        var shards = new List<RedisServerProcess>();
        try
        {
            for (var i = 0; i < masters; i++)
            {
                shards.Add(await RedisServerProcess.StartAsync(persistent, cluster: true));
            }

            var cluster = new RedisClusterProcess(shards);
            await cluster.RunCliAsync(["--cluster", "create", .. shards.Select(s => $"127.0.0.1:{s.Port}"), "--cluster-replicas", "0", "--cluster-yes"]);
            await cluster.WaitUntilServedAsync();
            return cluster;
        }
        catch
        {
            foreach (var shard in shards)
            {
                await shard.DisposeAsync();
            }

            throw;
        }
    }

    /// <summary>Waits until every shard says the cluster is up and serves all 16,384 slots: after a create, or a shard's restart.</summary>
    /// <returns>A task that completes when it does.</returns>
    /// <exception cref="TimeoutException">It did not within <see cref="Eventually.Limit"/>.</exception>
    public async Task WaitUntilServedAsync()
    {
        var started = Stopwatch.GetTimestamp();
        while (!Shards.All(s => Info(s) is var info && info.Contains("cluster_state:ok", StringComparison.Ordinal) && info.Contains("cluster_slots_ok:16384", StringComparison.Ordinal)))
        {
            if (Stopwatch.GetElapsedTime(started) > Eventually.Limit)
            {
                throw new TimeoutException($"The Redis Cluster on ports {string.Join(", ", Shards.Select(s => s.Port))} did not serve every slot within {Eventually.Limit.TotalSeconds} s.");
            }

            // Each look starts redis-cli once per shard: no faster than this.
            await Task.Delay(100);
        }
    }

    /// <summary>Stops every shard and deletes their folders.</summary>
    /// <returns>A task that completes when all have exited.</returns>
    public async ValueTask DisposeAsync()
    {
        foreach (var shard in Shards)
        {
            await shard.DisposeAsync();
        }
    }

    private static string Info(RedisServerProcess shard)
    {
        try
        {
            return Run(["-p", shard.Port.ToString(CultureInfo.InvariantCulture), "cluster", "info"]).Output;
        }
        catch (InvalidOperationException)
        {
            return string.Empty;
        }
    }

    private async Task RunCliAsync(string[] arguments)
    {
        // The create tool waits for the nodes to agree; it needs more than a moment on a busy machine.
        var (code, output) = await Task.Run(() => Run(arguments));
        if (code != 0)
        {
            throw new InvalidOperationException($"redis-cli {string.Join(' ', arguments)} failed ({code}) for ports {string.Join(", ", Shards.Select(s => s.Port))}: {output}");
        }
    }

    private static (int Code, string Output) Run(string[] arguments)
    {
        var start = new ProcessStartInfo(Cli, arguments) { RedirectStandardOutput = true, RedirectStandardError = true };
        using var process = Process.Start(start) ?? throw new InvalidOperationException($"{Cli} did not start.");
        var output = process.StandardOutput.ReadToEndAsync();
        var error = process.StandardError.ReadToEnd();
        process.WaitForExit();
        return (process.ExitCode, output.Result + error);
    }
}
