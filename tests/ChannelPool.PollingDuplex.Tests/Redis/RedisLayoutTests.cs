using System.Globalization;
using ChannelPool.PollingDuplex.Stores;
using Microsoft.Extensions.Time.Testing;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Tests.Redis;

/// <summary>Where the store's work goes in Redis: a publish's cost does not grow with its subscribers, and a Redis Cluster spreads one endpoint.</summary>
public class RedisLayoutTests
{
    [Test]
    public async Task APublish_RunsTheSameRedisCommands_WhetherItsTopicHasFiveSubscribersOrTwoHundred()
    {
        var configuration = await RedisServers.ConfigurationAsync(RedisKind.OneServer);
        using var admin = await ConnectionMultiplexer.ConnectAsync(configuration + ",allowAdmin=true");
        var server = admin.GetServer(admin.GetEndPoints()[0]);
        var perPublish = new List<(long Commands, long RoundTrips)>();
        foreach (var subscribers in new[] { 5, 200 })
        {
            // Fake time: no sweep or heartbeat of this node runs while Redis counts.
            await using var node = await RedisStoreNode.StartAsync(configuration, RedisStoreNode.NewKeyPrefix(), time: new FakeTimeProvider(DateTimeOffset.UtcNow));
            for (var i = 0; i < subscribers; i++)
            {
                Assert.That((await node.CommandAsync(await node.OpenAsync(), 1, "{\"op\":\"subscribe\",\"topic\":\"news\"}")).Status, Is.EqualTo(DuplexReceiveStatus.Accepted));
            }

            var publisher = await node.OpenAsync();
            var before = await CountAsync(server);
            for (var seq = 1; seq <= 10; seq++)
            {
                var published = await node.CommandAsync(publisher, seq, $"{{\"op\":\"publish\",\"topic\":\"news\",\"data\":{seq}}}");
                Assert.That(published.Status, Is.EqualTo(DuplexReceiveStatus.Accepted));
            }

            var after = await CountAsync(server);
            perPublish.Add(((after.Commands - before.Commands) / 10, (after.RoundTrips - before.RoundTrips) / 10));
        }

        Assert.That(perPublish[1], Is.EqualTo(perPublish[0]), $"commands and round trips per publish at 5 and at 200 subscribers: {string.Join(", ", perPublish)}");
        Assert.That(perPublish[0].RoundTrips, Is.EqualTo(3), "the send's lookup, the topic's append, the session's receive");
    }

    [Test]
    public async Task OnARedisCluster_OneEndpointsSessionsAndTopics_SpreadOverEveryShard()
    {
        var configuration = await RedisServers.ConfigurationAsync(RedisKind.Cluster);
        var prefix = RedisStoreNode.NewKeyPrefix();
        await using var node = await RedisStoreNode.StartAsync(configuration, prefix);
        for (var i = 0; i < 30; i++)
        {
            var session = await node.OpenAsync(userId: $"user-{i % 5}");
            Assert.That((await node.CommandAsync(session, 1, $"{{\"op\":\"subscribe\",\"topic\":\"room-{i % 10}\"}}", $"user-{i % 5}")).Status, Is.EqualTo(DuplexReceiveStatus.Accepted));
        }

        using var admin = await ConnectionMultiplexer.ConnectAsync(configuration);
        var shards = admin.GetServers().Where(s => !s.IsReplica).ToList();
        Assert.That(shards, Has.Count.EqualTo(3));
        foreach (var shard in shards)
        {
            var keys = new List<string>();
            await foreach (var key in shard.KeysAsync(pattern: prefix + "*", pageSize: 1000))
            {
                keys.Add(key!);
            }

            Assert.That(keys, Has.Some.Contains(":{s:"), $"shard {shard.EndPoint} holds sessions: {string.Join(", ", keys.Take(5))}");
            Assert.That(keys, Has.Some.Contains(":{t:"), $"shard {shard.EndPoint} holds topics");
        }

    }

    private static async Task<(long Commands, long RoundTrips)> CountAsync(IServer server)
    {
        long commands = 0, trips = 0;
        foreach (var pair in (await server.InfoAsync("commandstats")).SelectMany(g => g))
        {
            if (pair.Key is "cmdstat_info" || pair.Key.StartsWith("cmdstat_config", StringComparison.Ordinal))
            {
                continue;
            }

            // cmdstat_evalsha:calls=12,usec=...
            var calls = long.Parse(pair.Value.Split(',')[0].Split('=')[1], CultureInfo.InvariantCulture);
            commands += calls;
            trips += pair.Key is "cmdstat_evalsha" or "cmdstat_eval" ? calls : 0;
        }

        return (commands, trips);
    }
}
