using System.Text;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// Where an endpoint keeps each thing in Redis. Keys hash by what they belong to, so a Redis Cluster spreads one
/// endpoint over its shards: a session's keys share the hash tag <c>{s:id}</c>, a topic's <c>{t:name}</c>, a user's
/// <c>{u:id}</c>; only the endpoint-wide counts share <c>{endpoint}</c>. Every script touches the keys of one tag.
/// docs/polling-duplex.md ("Data layout") lists them.
/// </summary>
internal sealed class RedisKeys
{
    public RedisKeys(string keyPrefix, string pattern)
    {
        Endpoint = keyPrefix + ":" + Escape(pattern);
        var tag = "{" + Endpoint + "}";
        Live = tag + ":live";
        Pending = tag + ":pend";
        Info = tag + ":info";
        Owners = tag + ":own";
        SessionOwners = tag + ":so";
        Nodes = tag + ":nodes";
        WakeChannel = RedisChannel.Literal(Endpoint + ":wake");
    }

    /// <summary>Gets <c>KeyPrefix:pattern</c>, escaped: what starts every key and channel of the endpoint.</summary>
    public string Endpoint { get; }

    /// <summary>Gets the sessions by expiry (score): <c>MaxConcurrentSessions</c> across the cluster.</summary>
    public RedisKey Live { get; }

    /// <summary>Gets the never-polled sessions by first-poll deadline: <c>MaxPendingSessions</c>, oldest evicted first.</summary>
    public RedisKey Pending { get; }

    /// <summary>Gets each live session's encoding, mode and user, for the handler told that it expired.</summary>
    public RedisKey Info { get; }

    /// <summary>Gets each owner's (user's, or anonymous address's) session count; its sessions are the zset <c>own:&lt;owner&gt;</c>.</summary>
    public RedisKey Owners { get; }

    /// <summary>Gets each live session's owner.</summary>
    public RedisKey SessionOwners { get; }

    /// <summary>Gets the nodes serving the endpoint and the options each uses.</summary>
    public RedisKey Nodes { get; }

    /// <summary>Gets the channel every node listens on: a source's new entry, or a session's change.</summary>
    public RedisChannel WakeChannel { get; }

    /// <summary>Gets the source every session of <paramref name="topic"/>'s subscribers reads: <c>t:name</c>.</summary>
    public static string TopicSource(string topic) => "t:" + Escape(topic);

    /// <summary>Gets the source every session of the user <paramref name="userId"/> reads implicitly: <c>u:id</c>.</summary>
    public static string UserSource(string userId) => "u:" + Escape(userId);

    /// <summary>Gets whether <paramref name="source"/> is a topic's (rather than a user's).</summary>
    public static bool IsTopic(string source) => source.StartsWith("t:", StringComparison.Ordinal);

    /// <summary>
    /// Escapes a name for a key, a hash tag or a wake message: '%', braces, space and control characters become
    /// <c>%XX</c>. Injective, so two names never share keys; brace-free, so the hash tag is exactly the name.
    /// </summary>
    public static string Escape(string name)
    {
        var first = name.AsSpan().IndexOfAny(Special);
        if (first < 0)
        {
            return name;
        }

        var escaped = new StringBuilder(name.Length + 8).Append(name, 0, first);
        foreach (var c in name.AsSpan(first))
        {
            if (c <= ' ' || c is '%' or '{' or '}' or '\u007f')
            {
                escaped.Append('%').Append(((int)c).ToString("X2", System.Globalization.CultureInfo.InvariantCulture));
            }
            else
            {
                escaped.Append(c);
            }
        }

        return escaped.ToString();
    }

    /// <summary>Gets the keys of the session <paramref name="id"/> (a session id we made: base64url, no braces).</summary>
    public SessionKeys Session(string id)
    {
        var hash = Endpoint + ":{s:" + id + "}";
        return new SessionKeys([hash, hash + ":q", hash + ":c", hash + ":x"]);
    }

    /// <summary>Gets the keys of a source (<see cref="TopicSource"/>, <see cref="UserSource"/>).</summary>
    public SourceKeys Source(string source)
    {
        var meta = Endpoint + ":{" + source + "}";
        return new SourceKeys(meta, [meta, meta + ":log", meta + (IsTopic(source) ? ":subs" : ":sessions"), meta + ":at"]);
    }

    private static readonly System.Buffers.SearchValues<char> Special = System.Buffers.SearchValues.Create(
        "%{} \u007f\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\u0008\u0009\u000a\u000b\u000c\u000d\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f");
}

/// <summary>A session's keys, in the order its scripts take them: hash, queue, cursors, record.</summary>
/// <param name="All">Hash (its state), queue (frames after its acknowledgement), cursors (source → last entry taken), record (why it ended).</param>
internal readonly record struct SessionKeys(RedisKey[] All)
{
    public RedisKey Hash => All[0];

    public RedisKey Cursors => All[2];
}

/// <summary>A source's keys, in the order its scripts take them: meta, log, members, taken.</summary>
/// <param name="Meta">The hash of the log's epoch, last id and bytes.</param>
/// <param name="All">Meta, log (entries, oldest first), members (a topic's subscribers, a user's sessions, scored by expiry) and
/// taken (each member's last id taken, as its renewals report it: what every member has taken is freed).</param>
internal readonly record struct SourceKeys(string Meta, RedisKey[] All)
{
    public RedisKey Members => All[2];

    /// <summary>Gets the marker a client's publish leaves, so a send repeated after a lost response appends once.</summary>
    public RedisKey Marker(string sessionId) => Meta + ":p:" + sessionId;
}
