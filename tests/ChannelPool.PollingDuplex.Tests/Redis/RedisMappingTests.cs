using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>Mapping an endpoint on Redis: what it needs, the options it refuses, and nodes that must agree on the endpoint's options.</summary>
public class RedisMappingTests
{
    [Test]
    public void MappingWithoutTheRedisStore_SaysWhatToCall()
    {
        var builder = WebApplication.CreateSlimBuilder();
        using var app = builder.Build();
        var error = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplexPubSubOnRedis("/pubsub", o => o.Topics.AllowAnonymous = true));
        Assert.That(error!.Message, Does.Contain("AddPollingDuplexRedis"));
    }

    [Test]
    public async Task ANodeWhoseOptionsDifferFromALiveNodes_FailsToStart_NamingEachDifference_UntilTheOldNodesStop()
    {
        var redis = await RedisServers.ConfigurationAsync(RedisKind.OneServer);
        var prefix = "agree-" + Guid.NewGuid().ToString("N")[..8];
        DuplexClusterOptions Options(TimeSpan poll, int pending) => new()
        {
            Redis = redis,
            KeyPrefix = prefix,
            Configure = o =>
            {
                o.ServerPollTimeout = poll;
                o.MaxPendingSessions = pending;
            },
        };

        var old = await DuplexCluster.StartAsync(Options(TimeSpan.FromSeconds(10), 1024));
        await using (var same = await DuplexCluster.StartAsync(Options(TimeSpan.FromSeconds(10), 1024)))
        {
            Assert.That(same.Nodes, Has.Count.EqualTo(1), "a node with the same options joins");
        }

        var refused = Assert.CatchAsync(() => DuplexCluster.StartAsync(Options(TimeSpan.FromSeconds(5), 7)));
        var message = refused is AggregateException all ? string.Join(" ", all.InnerExceptions.Select(e => e.Message)) : refused!.Message;
        Assert.That(message, Does.Contain("ServerPollTimeout is 00:00:05 here but 00:00:10 on node")
            .And.Contain("MaxPendingSessions is 7 here but 1024")
            .And.Contain(prefix)
            .And.Contain("stop every node that uses the old ones"));
        Assert.That(message, Does.Not.Contain("MaxMessageSize"), "only what differs is named");

        // Stopped gracefully, the old node leaves: the new options start.
        await old.DisposeAsync();
        await using var renewed = await DuplexCluster.StartAsync(Options(TimeSpan.FromSeconds(5), 7));
        Assert.That(renewed.Nodes, Has.Count.EqualTo(1));
    }

    [TestCase("", "Configuration is required")]
    [TestCase("127.0.0.1:1,nonsense=1", "is not a StackExchange.Redis configuration string")]
    public void BadRedisOptions_FailAtStart_NamingTheRule(string configuration, string expected)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Services.AddPollingDuplexRedis(o =>
        {
            o.Configuration = configuration;
            o.KeyPrefix = "{bad}";
            o.OperationTimeout = TimeSpan.Zero;
        });
        using var app = builder.Build();
        var error = Assert.Throws<OptionsValidationException>(() => app.MapPollingDuplexPubSubOnRedis("/pubsub", o => o.Topics.AllowAnonymous = true));
        Assert.That(error!.Message, Does.Contain(expected).And.Contain("KeyPrefix").And.Contain("OperationTimeout"));
    }
}
