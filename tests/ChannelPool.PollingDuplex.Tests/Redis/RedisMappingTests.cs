using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>Mapping an endpoint on Redis: what it needs, and the options it refuses.</summary>
public class RedisMappingTests
{
    [Test]
    public void MappingWithoutTheRedisStore_SaysWhatToCall()
    {
        var builder = WebApplication.CreateSlimBuilder();
        using var app = builder.Build();
        var error = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplexPubSubOnRedis("/pubsub"));
        Assert.That(error!.Message, Does.Contain("AddPollingDuplexRedis"));
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
        var error = Assert.Throws<OptionsValidationException>(() => app.MapPollingDuplexPubSubOnRedis("/pubsub"));
        Assert.That(error!.Message, Does.Contain(expected).And.Contain("KeyPrefix").And.Contain("OperationTimeout"));
    }
}
