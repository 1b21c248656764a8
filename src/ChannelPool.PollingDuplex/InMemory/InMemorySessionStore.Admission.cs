using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// Who may open a session: within its owner's limit (<see cref="PollingDuplexOptions.MaxSessionsPerUser"/>, or
/// <see cref="PollingDuplexOptions.MaxSessionsPerAddress"/> for anonymous clients), and within
/// <see cref="PollingDuplexOptions.MaxConcurrentSessions"/>, where the owner holding the most sessions gives way rather
/// than the newcomer (docs/polling-duplex.md, "No lockout").
/// </summary>
internal sealed partial class InMemorySessionStore
{
    // Live sessions by owner: the per-owner count and, at the endpoint's cap, who holds the most.
    private readonly SessionGroups _owners = new();

    // Opens decide and create under one lock, so two opens of one owner cannot both take its last place. Opens are not
    // the hot path; polls and sends never take it.
    private readonly Lock _admission = new();

    /// <summary>Gets how many sessions <paramref name="owner"/> holds (see <see cref="DuplexSessionStore.OwnerOf"/>).</summary>
    internal int SessionsOf(string owner) => _owners.MemberCount(owner);

    /// <summary>
    /// Creates a session for <paramref name="userId"/> (or the anonymous client at <paramref name="remoteAddress"/>), or
    /// returns false with the limit that refused it. At MaxConcurrentSessions, the longest-idle session of the owner holding the most
    /// sessions is ended (<see cref="DuplexSessionEndReason.Displaced"/>) when that owner holds more than the newcomer's
    /// would with it; otherwise the open is refused.
    /// </summary>
    private bool TryAdmit(DuplexEncoding encoding, PollingDuplexMode mode, string? userId, string? remoteAddress, out DuplexOpenResult refusal, out DuplexSession session, out string token)
    {
        refusal = default;
        session = null!;
        token = null!;
        var (owner, limit) = OwnerOf(userId, remoteAddress);
        using (_admission.EnterScope())
        {
            var held = _owners.MemberCount(owner);
            if (held >= limit)
            {
                refusal = DuplexOpenResult.TooManyUserSessions;
                return false;
            }

            if (Volatile.Read(ref _sessionCount) >= Options.MaxConcurrentSessions && Volatile.Read(ref _shuttingDown) == 0)
            {
                if (LongestIdleOfLargestOwner(held + 1) is not { } victim)
                {
                    refusal = DuplexOpenResult.TooManySessions;
                    return false;
                }

                End(victim, DuplexSessionEndReason.Displaced);
            }

            if (TryReserve() is { } full)
            {
                refusal = full;
                return false;
            }

            try
            {
                (session, token) = Create(encoding, mode, userId, owner);
            }
            catch
            {
                Interlocked.Decrement(ref _sessionCount);
                throw;
            }
        }

        return true;
    }

    /// <summary>
    /// Finds the longest-idle session of the owner holding the most sessions, if it holds more than
    /// <paramref name="newcomerWouldHold"/>: giving way then never leaves it with fewer than the newcomer's owner.
    /// Walks every owner, but only when the endpoint is full.
    /// </summary>
    private DuplexSession? LongestIdleOfLargestOwner(int newcomerWouldHold)
    {
        if (_owners.Largest() is not { } largest || largest.Count <= newcomerWouldHold)
        {
            return null;
        }

        DuplexSession? idlest = null;
        foreach (var candidate in _owners.Members(largest.Key))
        {
            if (candidate.EndReason is null && (idlest is null || candidate.LastActivity < idlest.LastActivity))
            {
                idlest = candidate;
            }
        }

        return idlest;
    }
}
