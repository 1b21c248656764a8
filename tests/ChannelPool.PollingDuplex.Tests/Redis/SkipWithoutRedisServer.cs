namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>
/// On a machine without redis-server, the tests that start one are skipped, not failed: .ci/run installs it, and a
/// developer without it still runs everything else.
/// </summary>
[SetUpFixture]
public sealed class SkipWithoutRedisServer
{
    [OneTimeSetUp]
    public void IgnoreTestsThatNeedIt() => RedisServerProcess.WhenNotInstalled = Assert.Ignore;

    [OneTimeTearDown]
    public void Restore() => RedisServerProcess.WhenNotInstalled = null;
}
