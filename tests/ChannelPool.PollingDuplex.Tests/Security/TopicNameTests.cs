using System.Net;
using ChannelPool.PollingDuplex.PubSub;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>
/// Topic names are 1 to 256 UTF-16 code units of valid Unicode with no control characters, from a client
/// (<c>422 message-rejected</c>, saying why, counted received) and from the server's publisher (an
/// <see cref="ArgumentException"/> naming the parameter) alike, before any rule or store sees them.
/// </summary>
[TestFixture(DuplexStore.InMemory)]
[TestFixture(DuplexStore.Redis)]
public class TopicNameTests(DuplexStore store)
{
    private static readonly (string Name, string JsonTopic, string Reason)[] BadNames =
    [
        ("empty", "\"\"", "1 to 256 characters; it was 0"),
        ("too long", "\"" + new string('t', PubSubHandler.MaxTopicLength + 1) + "\"", "1 to 256 characters; it was 257"),
        ("a NUL", "\"a\\u0000b\"", "control characters; it holds U+0000 at position 1"),
        ("a line break", "\"line\\nbreak\"", "control characters; it holds U+000A at position 4"),
        ("a DEL", "\"del\\u007F\"", "control characters; it holds U+007F at position 3"),
        ("a C1 control", "\"next\\u0085line\"", "control characters; it holds U+0085 at position 4"),
        ("an unpaired surrogate", "\"half\\ud800\"", "valid Unicode text"),
        ("not a string", "42", "needs a \"topic\""),
    ];

    [Test]
    public async Task ABadTopicName_Is422MessageRejected_SayingWhy_WhateverTheRule()
    {
        var asked = 0;
        await using var server = await SecureDuplexServer.StartAsync(store, o => o.Topics.Authorize = (_, _) =>
        {
            Interlocked.Increment(ref asked);
            return ValueTask.FromResult(true);
        });
        using var http = SecureDuplexServer.ClientFor(null);
        var session = await RawSession.OpenAsync(http, server.Address);
        var sequence = 0;
        foreach (var (name, topic, reason) in BadNames)
        {
            foreach (var op in new[] { "subscribe", "publish", "unsubscribe" })
            {
                sequence++;
                var data = op == "publish" ? ",\"data\":1" : string.Empty;
                var problem = await RawSession.AssertProblemAsync(
                    await session.SendTextAsync($"{{\"seq\":{sequence},\"data\":{{\"op\":\"{op}\",\"topic\":{topic}{data}}}}}\n"),
                    HttpStatusCode.UnprocessableEntity,
                    "message-rejected");
                Assert.That(problem.GetProperty("detail").GetString(), Does.Contain(reason), $"{op} with {name}");
                Assert.That(problem.GetProperty("received").GetInt64(), Is.EqualTo(sequence), "a rejected command counts as received");
            }
        }

        Assert.That(asked, Is.Zero, "the rule never sees a name that is not valid");
        using var longest = await session.SendTextAsync($"{{\"seq\":{sequence + 1},\"data\":{{\"op\":\"subscribe\",\"topic\":\"{new string('t', PubSubHandler.MaxTopicLength)}\"}}}}\n");
        Assert.That(longest.StatusCode, Is.EqualTo(HttpStatusCode.OK), "256 characters is the longest allowed");
    }
}
