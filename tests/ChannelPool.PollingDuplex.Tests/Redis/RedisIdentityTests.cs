using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>A session on Redis keeps its user's id, and every later request must carry the same user, checked with the token in one step.</summary>
public class RedisIdentityTests
{
    [Test]
    public async Task ARequestWithAnotherUsersIdentity_IsTheWrongUser_AndTheSessionIsUnaffected()
    {
        await using var node = await RedisStoreNode.StartAsync(await RedisServers.ConfigurationAsync(RedisKind.OneServer), RedisStoreNode.NewKeyPrefix(), o => o.ServerPollTimeout = TimeSpan.FromMilliseconds(300));
        var alice = await node.OpenAsync("alice");
        Assert.That((await node.CommandAsync(alice, 1, "{\"op\":\"subscribe\",\"topic\":\"news\"}", "alice")).Status, Is.EqualTo(DuplexReceiveStatus.Accepted));
        await node.Store.PublishAsync("news", DuplexMessage.FromJson(new { topic = "news", data = 1 }), CancellationToken.None);
        var (_, frames) = await node.PollAsync(alice, 0, TimeSpan.FromSeconds(5), "alice");
        Assert.That(frames, Has.Count.EqualTo(1));

        foreach (var intruder in new[] { "bob", null })
        {
            Assert.That((await node.Store.FindAsync(alice.Id, alice.Token, intruder, CancellationToken.None)).Status, Is.EqualTo(DuplexLookupStatus.WrongUser), $"a send as {intruder ?? "nobody"}");
            var (start, _) = await node.PollAsync(alice, 1, TimeSpan.Zero, intruder);
            Assert.That(start.Lookup.Status, Is.EqualTo(DuplexLookupStatus.WrongUser), $"a poll as {intruder ?? "nobody"}");
            Assert.That((await node.Store.CloseAsync(alice.Id, alice.Token, intruder, CancellationToken.None)).Status, Is.EqualTo(DuplexLookupStatus.WrongUser), $"a close as {intruder ?? "nobody"}");
        }

        // The intruders' polls carried ack 1 and did not apply it: the frame is still there to be sent again.
        var (again, redelivered) = await node.PollAsync(alice, 0, TimeSpan.FromSeconds(5), "alice");
        Assert.That(again.Poll, Is.Not.Null);
        Assert.That(redelivered.Select(f => f.Sequence), Is.EqualTo(new long[] { 1 }));
        Assert.That((await node.Store.CloseAsync(alice.Id, alice.Token, "alice", CancellationToken.None)).Status, Is.EqualTo(DuplexLookupStatus.Found));
    }

    [Test]
    public async Task AnAnonymousSession_RefusesAnyUser_AndAnEndedSessionStillChecksItsUser()
    {
        await using var node = await RedisStoreNode.StartAsync(await RedisServers.ConfigurationAsync(RedisKind.OneServer), RedisStoreNode.NewKeyPrefix());
        var anonymous = await node.OpenAsync();
        Assert.That((await node.Store.FindAsync(anonymous.Id, anonymous.Token, "alice", CancellationToken.None)).Status, Is.EqualTo(DuplexLookupStatus.WrongUser));
        Assert.That((await node.Store.FindAsync(anonymous.Id, anonymous.Token, null, CancellationToken.None)).Status, Is.EqualTo(DuplexLookupStatus.Found));

        var alice = await node.OpenAsync("alice");
        Assert.That((await node.Store.CloseAsync(alice.Id, alice.Token, "alice", CancellationToken.None)).Status, Is.EqualTo(DuplexLookupStatus.Found));
        Assert.That((await node.Store.FindAsync(alice.Id, alice.Token, "bob", CancellationToken.None)).Status, Is.EqualTo(DuplexLookupStatus.WrongUser), "the record of an ended session keeps its user");
        var ended = await node.Store.FindAsync(alice.Id, alice.Token, "alice", CancellationToken.None);
        Assert.That((ended.Status, ended.EndReason), Is.EqualTo((DuplexLookupStatus.Ended, (DuplexSessionEndReason?)DuplexSessionEndReason.ClosedByClient)));
        Assert.That((await node.Store.FindAsync(alice.Id, "not-the-token", "alice", CancellationToken.None)).Status, Is.EqualTo(DuplexLookupStatus.InvalidToken), "the token is checked first");
    }
}
