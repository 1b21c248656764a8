using ChannelPool.PollingDuplex.Client;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>The .NET client and topic rules: a refused command is the application's error, not the session's end.</summary>
public class ClientTopicRuleTests
{
    [Test]
    public async Task AForbiddenCommand_ThrowsWithItsCode_AndTheSessionGoesOn()
    {
        await using var server = await SecureDuplexServer.StartAsync(DuplexStore.InMemory, o =>
        {
            o.ServerPollTimeout = TimeSpan.FromMilliseconds(200);
            o.Topics.Authorize = (access, _) => ValueTask.FromResult(!access.Topic.StartsWith("secret/", StringComparison.Ordinal));
        });
        using var http = SecureDuplexServer.ClientFor(null);
        var client = new PollingDuplexClient(http, server.Address, new PollingDuplexClientOptions { Encoding = DuplexEncoding.Binary });
        await using var session = await client.OpenSessionAsync();

        var refused = Assert.ThrowsAsync<PollingDuplexException>(async () => await session.SendAsync(
            [DuplexMessage.FromJson(new { op = "subscribe", topic = "fine" }), DuplexMessage.FromJson(new { op = "subscribe", topic = "secret/x" }), DuplexMessage.FromJson(new { op = "subscribe", topic = "later" })]));

        Assert.That((refused!.StatusCode, refused.Code, refused.SessionEnded), Is.EqualTo(((int?)403, DuplexWire.Codes.TopicForbidden, false)));
        Assert.That(refused.Message, Does.Contain("secret/x").And.Contain("were not delivered"));
        Assert.That(session.State, Is.EqualTo(DuplexClientSessionState.Open));

        // The client counted the refused command received, so its next send is numbered after it.
        await session.SendAsync([DuplexMessage.FromJson(new { op = "subscribe", topic = "later" }), DuplexMessage.FromJson(new { op = "publish", topic = "fine", data = 1, echo = true })]);
        var first = await session.ReceiveAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(30));
        Assert.That(System.Text.Encoding.UTF8.GetString(first.Message!.Payload.Span), Is.EqualTo("{\"topic\":\"fine\",\"data\":1}"), "a binary session carries the JSON bytes");
    }
}
