using System.Globalization;
using System.Reflection;
using System.Text;
using ChannelPool.PollingDuplex.Stores;
using StackExchange.Redis;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// What keeps the shared state honest without any node owning it: ends and what they leave to clean up, the sweep that
/// notices expired sessions, the lazy renewal of a live session's memberships, and the nodes' agreement on options.
/// </summary>
internal sealed partial class RedisSessionStore
{
    /// <summary>How long a node's entry among the endpoint's nodes lasts without renewal; it renews every third of it.</summary>
    private static readonly TimeSpan NodeEntryFor = TimeSpan.FromSeconds(30);

    private readonly HashSet<string> _renewing = [];
    private ITimer? _sweep;
    private ITimer? _heartbeat;
    private int _sweeping;
    private long _lastFeedSweep;
    private volatile string? _refusal;

    /// <summary>Gets this node's options as the nodes compare them: every setting that changes behaviour, by name.</summary>
    internal string OptionsFingerprint => _fingerprint ??= Fingerprint(Options);

    private string? _fingerprint;

    /// <summary>
    /// Joins the endpoint's nodes, or says which options differ from a live node's. Called at start, then every
    /// <see cref="NodeEntryFor"/> / 3. Throws <see cref="DuplexStoreUnavailableException"/> while Redis is away.
    /// </summary>
    /// <returns>Null when the options agree, or the message that names each difference.</returns>
    internal async Task<string?> AgreeAsync()
    {
        var now = Now();
        var r = await EvalAsync(
            RedisEndpointScripts.Agree,
            [Keys.Nodes],
            [now, NodeId, now + (long)NodeEntryFor.TotalMilliseconds, OptionsFingerprint, 2 * (long)NodeEntryFor.TotalMilliseconds]);
        if ((long)r[0] == 0)
        {
            return null;
        }

        var message = Disagreement((string)r[1]!, (string)r[2]!);
        _refusal = message;
        RedisDuplexLog.OptionsDisagree(_logger, message);
        return message;
    }

    /// <summary>Leaves the endpoint's nodes when the host stops, so a restart with new options is not refused by this node's entry.</summary>
    internal async Task LeaveNodesAsync()
    {
        try
        {
            await _db.HashDeleteAsync(Keys.Nodes, NodeId).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            // The entry expires on its own.
        }
    }

    internal void NoteAgreementDeferred(Exception error) => RedisDuplexLog.AgreementDeferred(_logger, Endpoint, error);

    /// <summary>A connection came back: wakes sent meanwhile were lost, so feeds read again and held polls look again.</summary>
    internal void OnReconnected()
    {
        Feeds.MarkStale();
        foreach (var poll in _polls.Values)
        {
            poll.WakeSession();
        }
    }

    /// <inheritdoc />
    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            _sweep?.Dispose();
            _heartbeat?.Dispose();
            Connection.Detach(this);
        }

        base.Dispose(disposing);
    }

    private void StartTimers()
    {
        var period = TimeSpan.FromTicks(Math.Clamp(FirstPollTimeout.Ticks / 4, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerSecond * 5));
        _sweep = TimeProvider.CreateTimer(static state => _ = ((RedisSessionStore)state!).SweepAsync(), this, period, period);
        _heartbeat = TimeProvider.CreateTimer(static state => _ = ((RedisSessionStore)state!).HeartbeatAsync(), this, NodeEntryFor / 3, NodeEntryFor / 3);
    }

    private void ThrowIfRefused()
    {
        if (_refusal is { } refusal)
        {
            throw new DuplexStoreUnavailableException(refusal);
        }
    }

    private async Task HeartbeatAsync()
    {
        try
        {
            await AgreeAsync();
        }
        catch (DuplexStoreUnavailableException)
        {
            // Renewed at the next beat; the entry outlives two missed ones.
        }
    }

    /// <summary>
    /// Takes the sessions whose expiry passed from the endpoint's set (each by one node), tells the application, and
    /// reports the endpoint's session counts; also drops feeds nobody on this node has used for a while.
    /// </summary>
    private async Task SweepAsync()
    {
        if (Interlocked.Exchange(ref _sweeping, 1) == 1)
        {
            return;
        }

        try
        {
            var now = Now();
            var r = await EvalAsync(RedisEndpointScripts.Sweep, _endpointKeys, [now, 100]);
            var pending = (int)(long)r[0];
            ReportSessionCounts(pending, Math.Max(0, (int)(long)r[1] - pending));
            for (var i = 2; i + 1 < r.Length; i += 2)
            {
                var id = (string)r[i]!;
                var info = (string)r[i + 1]!;
                if (await _db.KeyExistsAsync(Keys.Session(id).Hash).ConfigureAwait(false))
                {
                    // Its renewal was late (a node died before making it): it is alive, so it goes back.
                    await EvalAsync(RedisEndpointScripts.Restore, _endpointKeys, [id, LiveUntil(now), info]);
                    continue;
                }

                var parts = info.Split('|', 3);
                _ = CleanUpExpiredAsync(id);
                RecordSessionEnded(DuplexSessionEndReason.Expired);
                RedisDuplexLog.SessionEnded(_logger, Endpoint, id, DuplexSessionEndReason.Expired);
                if (_handler is not null && parts.Length == 3)
                {
                    Notify(id, parts[2].Length > 0 ? parts[2] : null, (DuplexEncoding)int.Parse(parts[0], CultureInfo.InvariantCulture), (PollingDuplexMode)int.Parse(parts[1], CultureInfo.InvariantCulture), DuplexSessionEndReason.Expired);
                }
            }

            _ = CheckQuietSessionsAsync();
            if (TimeProvider.GetElapsedTime(_lastFeedSweep) > TimeSpan.FromSeconds(10))
            {
                _lastFeedSweep = TimeProvider.GetTimestamp();
                Feeds.DropIdle(TimeSpan.FromSeconds(30));
            }
        }
        catch (Exception ex) when (ex is DuplexStoreUnavailableException or RedisException or RedisTimeoutException)
        {
            // The next sweep tries again.
        }
        finally
        {
            Volatile.Write(ref _sweeping, 0);
        }
    }

    /// <summary>Ends a session without its token (the application's close, an eviction); returns whether it ended here.</summary>
    private async Task<bool> EndByServerAsync(string id, DuplexSessionEndReason reason, bool onlyIfPending)
    {
        var r = await EvalSessionAsync(RedisSessionScripts.End, id, string.Empty, null, (int)reason, onlyIfPending ? "1" : "0");
        if ((long)r[0] != 0)
        {
            return false;
        }

        Ended(id, reason, r, 1);
        return true;
    }

    /// <inheritdoc />
    protected override async ValueTask EndSessionAsync(string sessionId, DuplexSessionEndReason reason, CancellationToken cancellationToken)
    {
        ThrowIfRefused();
        await EndByServerAsync(sessionId, reason, onlyIfPending: false);
    }

    /// <summary>The endpoint was full and another owner's open took this session's place (the Reserve script chose it): it ends.</summary>
    private async Task DisplaceAsync(string victim)
    {
        try
        {
            await EndByServerAsync(victim, DuplexSessionEndReason.Displaced, onlyIfPending: false);
        }
        catch (DuplexStoreUnavailableException)
        {
            // It left the endpoint's sets already; its keys expire with it.
        }
    }

    /// <summary>The newest open took the place of the oldest session that never polled: it ends, unless it polled meanwhile.</summary>
    private async Task EvictAsync(string victim)
    {
        try
        {
            if (!await EndByServerAsync(victim, DuplexSessionEndReason.Evicted, onlyIfPending: true))
            {
                await EvalAsync(RedisEndpointScripts.FirstPoll, _endpointKeys, [victim, LiveUntil(Now())]);
            }
        }
        catch (DuplexStoreUnavailableException)
        {
            // It expires at its first-poll deadline anyway, which is no later than the newcomer's.
        }
    }

    /// <summary>
    /// A session ended here: counts it, and leaves the endpoint's, its topics' and its user's sets (best effort: they
    /// expire on their own). <paramref name="r"/> holds its user, encoding, mode and sources from <paramref name="at"/>.
    /// </summary>
    private void Ended(string id, DuplexSessionEndReason reason, RedisResult[] r, int at)
    {
        RecordSessionEnded(reason);
        RedisDuplexLog.SessionEnded(_logger, Endpoint, id, reason);
        var userId = (string?)r[at];
        var sources = new List<string>(r.Length - at - 3);
        for (var i = at + 3; i < r.Length; i++)
        {
            sources.Add((string)r[i]!);
        }

        _ = CleanUpAsync(id, sources);
        if (_handler is not null)
        {
            Notify(id, string.IsNullOrEmpty(userId) ? null : userId, (DuplexEncoding)(int)r[at + 1], (PollingDuplexMode)(int)r[at + 2], reason);
        }
    }

    /// <summary>
    /// An expired session's keys are gone, but its cursors outlive it (by the inactivity timeout) so that this sweep can
    /// leave its sources: nothing of it stays behind in a topic's or its user's keys.
    /// </summary>
    private async Task CleanUpExpiredAsync(string id)
    {
        try
        {
            var cursors = Keys.Session(id).Cursors;
            var sources = (await _db.HashKeysAsync(cursors).ConfigureAwait(false)).Select(k => (string)k!).ToList();
            await CleanUpAsync(id, sources);
            await _db.KeyDeleteAsync(cursors).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is RedisException or RedisTimeoutException)
        {
            RedisDuplexLog.CleanupFailed(_logger, Endpoint, id, ex);
        }
    }

    private async Task CleanUpAsync(string id, List<string> sources)
    {
        try
        {
            var leaving = new List<Task>(sources.Count + 2) { EvalAsync(RedisEndpointScripts.Leave, _endpointKeys, [id]), ForgetOpenAsync(id) };
            foreach (var source in sources)
            {
                leaving.Add(LeaveAsync(source, id));
            }

            await Task.WhenAll(leaving).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is DuplexStoreUnavailableException or RedisException or RedisTimeoutException)
        {
            RedisDuplexLog.CleanupFailed(_logger, Endpoint, id, ex);
        }
    }

    private void Notify(string id, string? userId, DuplexEncoding encoding, PollingDuplexMode mode, DuplexSessionEndReason reason) =>
        _ = NotifyEndedAsync(CreateSessionHandle(id, userId, encoding, mode), reason);

    private async Task NotifyEndedAsync(DuplexSessionHandle session, DuplexSessionEndReason reason)
    {
        await Task.Yield();
        try
        {
            await _handler!.OnSessionEndedAsync(session, reason).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            RedisDuplexLog.HandlerFailed(_logger, Endpoint, session.Id, ex);
        }
    }

    /// <summary>
    /// Renews a live session's entries in the endpoint's, its topics' and its user's sets when the last renewal is
    /// <see cref="RenewEveryMs"/> old: lazily, so a poll does not touch every topic's slot each time. The session
    /// records the renewal only after the sets have it, so a failed one is tried again at its next request. The
    /// renewal's joins also count what its sources hold beyond its cursors, for its allowance (<c>.Allowance.cs</c>):
    /// the messages published after <paramref name="since"/> (none while a poll is outstanding, as in memory), and
    /// the bytes.
    /// </summary>
    private void RenewIfDue(string id, long renewedAt, IReadOnlyDictionary<string, string>? cursors, long? since, bool text)
    {
        var now = Now();
        if (now - renewedAt < RenewEveryMs)
        {
            return;
        }

        lock (_renewing)
        {
            if (!_renewing.Add(id))
            {
                return;
            }
        }

        _ = RenewAsync(id, now, cursors?.ToList(), since, text);
    }

    /// <summary>
    /// Renews the session's memberships, each reporting the session's cursor there (what it has taken) and what the
    /// log holds beyond it; a session over its allowance meets its overflow policy instead of being recorded renewed.
    /// </summary>
    private async Task RenewAsync(string id, long now, List<KeyValuePair<string, string>>? cursors, long? since, bool text)
    {
        try
        {
            var keys = Keys.Session(id);
            cursors ??= [.. (await _db.HashGetAllAsync(keys.Cursors).ConfigureAwait(false)).Select(e => KeyValuePair.Create((string)e.Name!, (string)e.Value!))];
            var until = LiveUntil(now);
            var live = _db.SortedSetAddAsync(Keys.Live, id, until, SortedSetWhen.Exists);
            var joins = new List<Task<LogBehind>>(cursors.Count);
            foreach (var (source, cursor) in cursors)
            {
                joins.Add(RenewMembershipAsync(source, id, until, cursor, since, text));
            }

            await live.ConfigureAwait(false);
            if (await EnforceAllowanceAsync(id, await Task.WhenAll(joins).ConfigureAwait(false)))
            {
                return;
            }

            await EvalSessionAsync(RedisSessionScripts.Renewed, id, string.Empty, null, now);
        }
        catch (Exception ex) when (ex is DuplexStoreUnavailableException or RedisException or RedisTimeoutException)
        {
            // Tried again at the session's next request.
        }
        finally
        {
            lock (_renewing)
            {
                _renewing.Remove(id);
            }
        }
    }

    /// <summary>Names each option that differs from another node's, and what to do about it.</summary>
    private string Disagreement(string node, string theirs)
    {
        static Dictionary<string, string> Split(string fingerprint) => fingerprint.Split(';', StringSplitOptions.RemoveEmptyEntries)
            .Select(p => p.Split('=', 2))
            .ToDictionary(p => p[0], p => p.Length > 1 ? p[1] : string.Empty, StringComparer.Ordinal);
        var mine = Split(OptionsFingerprint);
        var other = Split(theirs);
        var differences = mine.Keys.Union(other.Keys)
            .Where(k => !mine.TryGetValue(k, out var a) || !other.TryGetValue(k, out var b) || a != b)
            .Order(StringComparer.Ordinal)
            .Select(k => $"{k} is {(mine.TryGetValue(k, out var a) ? a : "(unknown)")} here but {(other.TryGetValue(k, out var b) ? b : "(unknown)")} on node {node}");
        return $"Polling duplex endpoint '{Endpoint}' on Redis (key prefix '{Connection.Options.KeyPrefix}'): this node's PollingDuplexOptions differ from those of a live node serving the same endpoint: {string.Join("; ", differences)}. " +
            "Every node enforces the limits and timeouts of whichever request it serves, so they must agree. To change options, stop every node that uses the old ones (a node's entry lapses " +
            $"{NodeEntryFor.TotalSeconds:0} s after it stops), or start the new ones under another KeyPrefix.";
    }

    /// <summary>Every public setting of a simple type, by name: what changes behaviour across nodes. Callbacks and objects are not comparable, and are left out.</summary>
    private static string Fingerprint(PollingDuplexOptions options)
    {
        var text = new StringBuilder();
        foreach (var property in typeof(PollingDuplexOptions).GetProperties(BindingFlags.Public | BindingFlags.Instance).OrderBy(p => p.Name, StringComparer.Ordinal))
        {
            var type = Nullable.GetUnderlyingType(property.PropertyType) ?? property.PropertyType;
            if (type.IsPrimitive || type.IsEnum || type == typeof(string) || type == typeof(TimeSpan) || type == typeof(decimal))
            {
                text.Append(property.Name).Append('=').Append(Convert.ToString(property.GetValue(options), CultureInfo.InvariantCulture)).Append(';');
            }
        }

        return text.ToString();
    }
}
