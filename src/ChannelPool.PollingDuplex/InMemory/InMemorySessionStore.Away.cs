using System.Collections.Concurrent;
using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex;

/// <summary>The in-memory store's remembered opens (by <c>openId</c>) and its sessions whose page went away.</summary>
internal sealed partial class InMemorySessionStore
{
    // Keyed by user and open id, so another user's open with the same id finds nothing.
    private readonly ConcurrentDictionary<(string? UserId, string OpenId), RememberedOpen> _opens = new();

    /// <summary>Gets how many opens are remembered.</summary>
    internal int RememberedOpenCount => _opens.Count;

    /// <inheritdoc />
    protected internal override ValueTask<DuplexRememberedOpen?> FindOpenAsync(string openId, string? userId, CancellationToken cancellationToken)
    {
        var key = (userId, openId);
        if (!_opens.TryGetValue(key, out var remembered))
        {
            return ValueTask.FromResult<DuplexRememberedOpen?>(null);
        }

        if (!IsCurrent(remembered, TimeProvider.GetTimestamp()))
        {
            _opens.TryRemove(KeyValuePair.Create(key, remembered));
            return ValueTask.FromResult<DuplexRememberedOpen?>(null);
        }

        return ValueTask.FromResult<DuplexRememberedOpen?>(remembered.Answer);
    }

    /// <inheritdoc />
    protected internal override ValueTask<DuplexRememberedOpen> RememberOpenAsync(string openId, string? userId, DuplexRememberedOpen opened, CancellationToken cancellationToken)
    {
        var now = TimeProvider.GetTimestamp();
        var mine = new RememberedOpen(opened, now + (long)(OpenIdRetention.TotalSeconds * TimeProvider.TimestampFrequency));
        var standing = _opens.AddOrUpdate((userId, openId), mine, (_, other) => IsCurrent(other, now) ? other : mine);
        return ValueTask.FromResult(standing.Answer);
    }

    /// <inheritdoc />
    protected internal override ValueTask<DuplexSessionLookup> AwayAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken)
    {
        var lookup = Find(sessionId, token, userId, out var session);
        if (session is not null)
        {
            session.AwayUntil = TimeProvider.GetTimestamp() + (long)(Options.EffectiveAwayGracePeriod.TotalSeconds * TimeProvider.TimestampFrequency);
        }

        return ValueTask.FromResult(lookup);
    }

    /// <summary>Whether the session's page went away and no request came back within the grace period.</summary>
    private static bool IsAwayPast(DuplexSession session, long now) => session.AwayUntil is var until && until != 0 && now > until;

    /// <summary>Forgets the opens past their retention or whose session ended, so they hold memory only while they matter.</summary>
    private void ForgetOpens(long now)
    {
        foreach (var (key, remembered) in _opens)
        {
            if (!IsCurrent(remembered, now))
            {
                _opens.TryRemove(KeyValuePair.Create(key, remembered));
            }
        }
    }

    private bool IsCurrent(RememberedOpen remembered, long now) => now <= remembered.ForgetAt && _sessions.ContainsKey(remembered.Answer.SessionId);

    private sealed record RememberedOpen(DuplexRememberedOpen Answer, long ForgetAt);
}
