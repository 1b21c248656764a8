using System.Globalization;
using ChannelPool.PollingDuplex.Stores;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// Remembered opens (by the client's <c>openId</c>) and sessions whose page went away, on Redis, with the in-memory
/// store's rules: an open's answer is kept under a key of its own that expires after <see cref="DuplexSessionStore.OpenIdRetention"/>
/// and counts only while its session lives; an away session's keys expire within the grace unless a request comes back.
/// The remembered answer holds the session's token, so it is deleted when the session ends (its session's pointer key,
/// <c>:o</c>, names it), not left for the rest of the retention: Redis holds a token only while it grants something.
/// </summary>
internal sealed partial class RedisSessionStore
{
    /// <inheritdoc />
    protected override async ValueTask<DuplexRememberedOpen?> FindOpenAsync(string openId, string? userId, CancellationToken cancellationToken)
    {
        ThrowIfRefused();
        var key = OpenKey(openId, userId);
        try
        {
            return await CurrentOpenAsync(key, await _db.StringGetAsync(key).ConfigureAwait(false)).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            throw Unavailable(ex);
        }
    }

    /// <inheritdoc />
    protected override async ValueTask<DuplexRememberedOpen> RememberOpenAsync(string openId, string? userId, DuplexRememberedOpen opened, CancellationToken cancellationToken)
    {
        var key = OpenKey(openId, userId);
        var value = $"{opened.SessionId}|{(int)opened.Encoding}|{(int)opened.Mode}|{opened.Token}";
        try
        {
            if (await _db.StringSetAsync(key, value, OpenIdRetention, When.NotExists).ConfigureAwait(false))
            {
                await PointAtOpenAsync(opened.SessionId, key).ConfigureAwait(false);
                return opened;
            }

            // A concurrent open with the same id was remembered first: it stands, unless its session is already gone.
            if (await CurrentOpenAsync(key, await _db.StringGetAsync(key).ConfigureAwait(false)).ConfigureAwait(false) is { } earlier)
            {
                return earlier;
            }

            await _db.StringSetAsync(key, value, OpenIdRetention).ConfigureAwait(false);
            await PointAtOpenAsync(opened.SessionId, key).ConfigureAwait(false);
            return opened;
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            throw Unavailable(ex);
        }
    }

    /// <inheritdoc />
    protected override async ValueTask<DuplexSessionLookup> AwayAsync(string sessionId, string token, string? userId, CancellationToken cancellationToken)
    {
        ThrowIfRefused();
        if (!IsSessionId(sessionId))
        {
            return DuplexSessionLookup.Unknown;
        }

        var grace = Math.Min((long)Options.AwayGracePeriod.TotalMilliseconds, InactivityMs);
        var lookup = Read(await EvalSessionAsync(RedisAwayScripts.Away, sessionId, Hash(token), userId, grace));
        if (lookup.Status == DuplexLookupStatus.Found)
        {
            // The sweep looks at it once the grace is over: ended then unless it came back (then it is put back).
            try
            {
                await _db.SortedSetAddAsync(Keys.Live, sessionId, Now() + grace + 1, SortedSetWhen.Exists).ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
            {
                // Its keys expire within the grace anyway; the sweep notices at the session's own deadline.
            }
        }

        return lookup;
    }

    /// <summary>
    /// Lets the session's end find its remembered open. A session that ended before the pointer was written (its cleanup
    /// found none) is checked here, so its open is forgotten either way.
    /// </summary>
    private async Task PointAtOpenAsync(string sessionId, RedisKey openKey)
    {
        await _db.StringSetAsync(OpenPointer(sessionId), (string)openKey!, OpenIdRetention).ConfigureAwait(false);
        if (!await _db.KeyExistsAsync(Keys.Session(sessionId).Hash).ConfigureAwait(false))
        {
            await ForgetOpenAsync(sessionId).ConfigureAwait(false);
        }
    }

    /// <summary>Deletes the session's remembered open, if it has one (part of its cleanup on every kind of end).</summary>
    private async Task ForgetOpenAsync(string sessionId)
    {
        var pointer = OpenPointer(sessionId);
        if ((string?)await _db.StringGetAsync(pointer).ConfigureAwait(false) is { } openKey)
        {
            await EvalAsync(RedisAwayScripts.ForgetOpen, [openKey], [sessionId + "|"]).ConfigureAwait(false);
            await _db.KeyDeleteAsync(pointer).ConfigureAwait(false);
        }
    }

    /// <summary>The key naming the session's remembered open, if any: it expires with the open's retention.</summary>
    private RedisKey OpenPointer(string sessionId) => Keys.Session(sessionId).Hash.Append(":o");

    /// <summary>The key of <paramref name="userId"/>'s open <paramref name="openId"/> (already checked: no braces), hashed by the open id.</summary>
    private RedisKey OpenKey(string openId, string? userId) =>
        Keys.Endpoint + ":{o:" + openId + "}:" + (userId is null ? "-" : "u:" + RedisKeys.Escape(userId));

    /// <summary>Reads a remembered open, deleting it when its session has ended.</summary>
    private async Task<DuplexRememberedOpen?> CurrentOpenAsync(RedisKey key, RedisValue value)
    {
        if ((string?)value is not { } text || text.Split('|', 4) is not [var id, var encoding, var mode, var token])
        {
            return null;
        }

        if (!await _db.KeyExistsAsync(Keys.Session(id).Hash).ConfigureAwait(false))
        {
            await _db.KeyDeleteAsync(key, CommandFlags.FireAndForget).ConfigureAwait(false);
            return null;
        }

        return new DuplexRememberedOpen(id, token, (DuplexEncoding)int.Parse(encoding, CultureInfo.InvariantCulture), (PollingDuplexMode)int.Parse(mode, CultureInfo.InvariantCulture));
    }
}
