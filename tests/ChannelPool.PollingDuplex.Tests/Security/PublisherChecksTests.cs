using ChannelPool.PollingDuplex.PubSub;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging.Abstractions;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// What the publisher checks before any store is asked, and how the application finds it. What a publish queues is in
/// <see cref="BroadcastSharingTests"/>.
/// </summary>
public class PublisherChecksTests
{
    [Test]
    public async Task ThePublisher_IsResolvedByThePattern_OrAsTheOnlyEndpoint_AndSaysWhatIsMissing()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Services.AddPollingDuplexPubSub();
        await using var app = builder.Build();
        var early = Assert.Throws<InvalidOperationException>(() => app.Services.GetRequiredService<IPubSubPublisher>());

        app.MapPollingDuplexPubSub("/a", o => o.Topics.AllowAnonymous = true);
        var only = app.Services.GetRequiredService<IPubSubPublisher>();
        var byPattern = app.Services.GetRequiredKeyedService<IPubSubPublisher>("/a");
        var unknown = Assert.Throws<InvalidOperationException>(() => app.Services.GetRequiredKeyedService<IPubSubPublisher>("/nowhere"));
        app.MapPollingDuplexPubSub("/b", o => o.Topics.AllowAnonymous = true);
        var second = app.Services.GetRequiredKeyedService<IPubSubPublisher>("/b");

        Assert.That(early!.Message, Does.Contain("No pub/sub endpoint is mapped yet"));
        Assert.That((only.Endpoint, byPattern.Endpoint, second.Endpoint), Is.EqualTo(("/a", "/a", "/b")));
        Assert.That(unknown!.Message, Does.Contain("no pub/sub endpoint mapped at '/nowhere' (mapped: /a)"));
        using var fresh = WebApplication.CreateSlimBuilder().Build();
        Assert.That(fresh.Services.GetService<IPubSubPublisher>(), Is.Null, "without AddPollingDuplexPubSub nothing is registered");
    }

    [Test]
    public void ThePublisher_RefusesWhatNoClientCouldReceive()
    {
        using var memory = new InMemorySessionStore("/p", new PollingDuplexOptions { MaxMessageSize = 64, MaxPendingBytesPerSession = 1024, MaxSendRequestSize = 1024 }, new PubSubHandler(), TimeProvider.System, NullLogger.Instance);
        var publisher = new PubSubPublisher(memory);
        var big = DuplexMessage.FromJson(new string('x', 100));

        var rawData = Assert.ThrowsAsync<ArgumentException>(async () => await publisher.PublishAsync("t", DuplexMessage.FromBytes(new byte[] { 1 })));
        var tooBig = Assert.ThrowsAsync<ArgumentException>(async () => await publisher.PublishAsync("t", big));
        var noUser = Assert.ThrowsAsync<ArgumentException>(async () => await publisher.SendToUserAsync(string.Empty, DuplexMessage.FromJson(1)));
        var rawMessage = Assert.ThrowsAsync<ArgumentException>(async () => await publisher.SendToUserAsync("alice", DuplexMessage.FromBytes(new byte[] { 1 })));
        var tooBigForUser = Assert.ThrowsAsync<ArgumentException>(async () => await publisher.SendToUserAsync("alice", big));

        Assert.That(rawData!.Message, Does.Contain("must be one JSON value"));
        Assert.That(tooBig!.Message, Does.Contain("over the endpoint's 64-byte MaxMessageSize"));
        Assert.That(noUser!.ParamName, Is.EqualTo("userId"));
        Assert.That(rawMessage!.Message, Does.Contain("must be JSON"));
        Assert.That(tooBigForUser!.Message, Does.Contain("64-byte MaxMessageSize"));
    }

    // Named, not given as arguments: a NUL or a lone surrogate in a test's name breaks test result files.
    [TestCase("empty")]
    [TestCase("nul")]
    [TestCase("tab")]
    [TestCase("unpaired surrogate")]
    public void ThePublisher_RefusesTheNamesClientsMayNotUse(string kind)
    {
        var topic = kind switch
        {
            "empty" => string.Empty,
            "nul" => "a\0b",
            "tab" => "tab\there",
            _ => "half\ud800",
        };
        using var memory = new InMemorySessionStore("/p", new PollingDuplexOptions(), new PubSubHandler(), TimeProvider.System, NullLogger.Instance);
        var publisher = new PubSubPublisher(memory);
        var tooLong = new string('t', PubSubHandler.MaxTopicLength + 1);

        var published = Assert.ThrowsAsync<ArgumentException>(async () => await publisher.PublishAsync(topic, DuplexMessage.FromJson(1)));
        var counted = Assert.ThrowsAsync<ArgumentException>(async () => await publisher.CountSubscribersAsync(topic));
        var legacy = Assert.Throws<ArgumentException>(() => ((PubSubHandler)memory.Handler).Publish(tooLong, "1"u8));

        Assert.That(published!.ParamName, Is.EqualTo("topic"));
        Assert.That(published.Message, Does.StartWith("A topic must"));
        Assert.That(counted!.ParamName, Is.EqualTo("topic"));
        Assert.That(legacy!.Message, Does.Contain("it was 257"));
    }
}
