using ChannelPool.PollingDuplex.PubSub;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>Exposing topics without a rule is a choice written down: anything else stops the application at start, saying what to add.</summary>
public class TopicRuleStartupTests
{
    [Test]
    public void MappingPubSub_WithoutARuleOrTheAnonymousOptIn_FailsAtStart_SayingWhatToAdd()
    {
        using var app = WebApplication.CreateSlimBuilder().Build();

        var inMemory = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplexPubSub("/pubsub"));
        var onRedis = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplexPubSubOnRedis("/shared"));
        var asHandler = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplex<PubSubHandler>("/handler"));

        Assert.That(inMemory!.Message, Does.StartWith("Pub/sub endpoint '/pubsub' needs a topic rule")
            .And.Contain("options.Topics.Authorize").And.Contain("options.Topics.Policy").And.Contain("options.Topics.AllowAnonymous = true"));
        Assert.That(onRedis!.Message, Does.StartWith("Pub/sub endpoint '/shared' needs a topic rule"), "checked before the store, so it is the first thing said");
        Assert.That(asHandler!.Message, Does.StartWith("Pub/sub endpoint '/handler' needs a topic rule"), "the pub/sub handler mapped by hand is the same endpoint");
    }

    [Test]
    public void TheAnonymousOptIn_WithARule_FailsAtStart()
    {
        using var app = WebApplication.CreateSlimBuilder().Build();

        var error = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplexPubSub("/pubsub", o =>
        {
            o.Topics.AllowAnonymous = true;
            o.Topics.Authorize = (_, _) => ValueTask.FromResult(true);
        }));

        Assert.That(error!.Message, Does.Contain("AllowAnonymous lets every client use every topic, so it cannot be combined with Topics.Authorize or Topics.Policy"));
    }

    [Test]
    public void APolicyThatIsNotRegistered_FailsAtStart_NamingIt()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Services.AddAuthorization();
        using var withAuthorization = builder.Build();
        using var without = WebApplication.CreateSlimBuilder().Build();

        var unknown = Assert.Throws<InvalidOperationException>(() => withAuthorization.MapPollingDuplexPubSub("/pubsub", o => o.Topics.Policy = "topics"));
        var noService = Assert.Throws<InvalidOperationException>(() => without.MapPollingDuplexPubSub("/pubsub", o => o.Topics.Policy = "topics"));
        var empty = Assert.Throws<InvalidOperationException>(() => withAuthorization.MapPollingDuplexPubSub("/other", o => o.Topics.Policy = " "));

        Assert.That(unknown!.Message, Does.Contain("the policy 'topics', which is not registered").And.Contain("AddPolicy(\"topics\""));
        Assert.That(noService!.Message, Does.Contain("there is no authorization service").And.Contain("services.AddAuthorization("));
        Assert.That(empty!.Message, Does.Contain("must name an authorization policy"));
    }

    [Test]
    public void TopicRules_OnAnEndpointThatIsNotPubSub_FailAtStart()
    {
        using var app = WebApplication.CreateSlimBuilder().Build();

        var error = Assert.Throws<InvalidOperationException>(() => app.MapPollingDuplex<RecordingHandler>("/chat", o => o.Topics.AllowAnonymous = true));

        Assert.That(error!.Message, Does.Contain("'/chat'").And.Contain("is not a pub/sub endpoint").And.Contain("Leave Topics unset"));
    }
}
