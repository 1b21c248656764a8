namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>Which Redis a test's nodes share: one server, or a Redis Cluster of three masters.</summary>
public enum RedisKind
{
    /// <summary>One redis-server.</summary>
    OneServer,

    /// <summary>Three redis-server masters joined with <c>redis-cli --cluster create</c>.</summary>
    Cluster,
}

/// <summary>
/// The Redis servers the tests in this folder share: one server and one 3-master Redis Cluster, each started on first
/// use and stopped once at the end, so the suite pays for them once. Every <see cref="DuplexCluster"/> gets a key prefix
/// of its own, so tests sharing a server never see each other's sessions. On a machine without redis-server the tests
/// that need it are skipped, not failed: .ci/run installs it, and a developer without it still runs everything else.
/// </summary>
[SetUpFixture]
public sealed class RedisServers
{
    private static readonly SemaphoreSlim Gate = new(1, 1);
    private static RedisServerProcess? _single;
    private static RedisClusterProcess? _cluster;

    /// <summary>Gets the configuration string of the shared Redis of that kind, starting it on first use.</summary>
    /// <param name="kind">One server, or the cluster.</param>
    /// <returns>What <c>AddPollingDuplexRedis</c> takes.</returns>
    public static async Task<string> ConfigurationAsync(RedisKind kind)
    {
        await Gate.WaitAsync();
        try
        {
            return kind == RedisKind.OneServer
                ? (_single ??= await RedisServerProcess.StartAsync()).Configuration
                : (_cluster ??= await RedisClusterProcess.StartAsync()).Configuration;
        }
        finally
        {
            Gate.Release();
        }
    }

    [OneTimeSetUp]
    public void IgnoreTestsThatNeedIt() => RedisServerProcess.WhenNotInstalled = Assert.Ignore;

    [OneTimeTearDown]
    public async Task StopAsync()
    {
        RedisServerProcess.WhenNotInstalled = null;
        if (_single is not null)
        {
            await _single.DisposeAsync();
            _single = null;
        }

        if (_cluster is not null)
        {
            await _cluster.DisposeAsync();
            _cluster = null;
        }
    }
}
