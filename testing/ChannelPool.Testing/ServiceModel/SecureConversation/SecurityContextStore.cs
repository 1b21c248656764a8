using System.Collections.Concurrent;

namespace ChannelPool.Testing.ServiceModel.SecureConversation;

/// <summary>The security context tokens the service has issued and not yet forgotten.</summary>
internal sealed class SecurityContextStore(SecureConversationOptions options)
{
    private readonly ConcurrentDictionary<string, SecurityContext> _contexts = new(StringComparer.Ordinal);
    private long _issued;

    public SecurityContext Issue(string userName, byte[] key)
    {
        DateTimeOffset now = options.TimeProvider.GetUtcNow();
        var context = new SecurityContext($"urn:uuid:{Guid.NewGuid()}", userName, key, now, now + options.TokenLifetime);
        context.Touch(now);
        _contexts[context.Identifier] = context;

        // Tokens of channels that were aborted, not closed, are never cancelled; forget the dead ones now and then, so a
        // long perf run does not keep them all.
        if (Interlocked.Increment(ref _issued) % 256 == 0)
        {
            foreach (SecurityContext stale in _contexts.Values.Where(c => now >= c.Expires || now - c.LastUsed >= options.InactivityTimeout))
            {
                _contexts.TryRemove(stale.Identifier, out _);
            }
        }

        return context;
    }

    /// <summary>Finds a live context and marks it used; an expired or idle one is forgotten.</summary>
    /// <returns>The context, or <see langword="null"/> with the reason it cannot be used.</returns>
    public SecurityContext? Use(string identifier, out string? reason)
    {
        DateTimeOffset now = options.TimeProvider.GetUtcNow();
        if (!_contexts.TryGetValue(identifier, out SecurityContext? context))
        {
            reason = $"The security context token '{identifier}' is unknown or was cancelled.";
            return null;
        }

        if (now >= context.Expires)
        {
            _contexts.TryRemove(identifier, out _);
            reason = $"The security context token '{identifier}' expired at {context.Expires:O}.";
            return null;
        }

        if (now - context.LastUsed >= options.InactivityTimeout)
        {
            _contexts.TryRemove(identifier, out _);
            reason = $"The security context token '{identifier}' was idle longer than the inactivity timeout ({options.InactivityTimeout}).";
            return null;
        }

        context.Touch(now);
        reason = null;
        return context;
    }

    /// <summary>Finds a context without using it: no expiry check, no touch.</summary>
    /// <returns>The context, or <see langword="null"/> when the service does not know the identifier.</returns>
    public SecurityContext? Find(string identifier) => _contexts.TryGetValue(identifier, out SecurityContext? context) ? context : null;

    public bool Cancel(string identifier) => _contexts.TryRemove(identifier, out _);

    /// <summary>Gets the number of tokens the service still knows.</summary>
    public int Count => _contexts.Count;
}

/// <summary>One issued security context: its identifier, the user it was issued to, its key and its times.</summary>
internal sealed class SecurityContext(string identifier, string userName, byte[] key, DateTimeOffset created, DateTimeOffset expires)
{
    private long _lastUsedTicks;
    private int _callsInProgress;

    public string Identifier { get; } = identifier;

    public string UserName { get; } = userName;

    public byte[] Key { get; } = key;

    public DateTimeOffset Created { get; } = created;

    public DateTimeOffset Expires { get; } = expires;

    public DateTimeOffset LastUsed => new(Interlocked.Read(ref _lastUsedTicks), TimeSpan.Zero);

    /// <summary>
    /// Gets the session's turn under <see cref="ServiceConcurrency.Single"/>: one request holds it from its signature
    /// check to its reply. A semaphore hands itself to asynchronous waiters first in, first out, so requests are served
    /// in the order they arrived, as from WCF's session channel queue. Never disposed: it never makes a wait handle.
    /// </summary>
    public SemaphoreSlim Turn { get; } = new(1, 1);

    public void Touch(DateTimeOffset now) => Interlocked.Exchange(ref _lastUsedTicks, now.UtcTicks);

    /// <returns>The session's calls in progress, this one included.</returns>
    public int CallStarted() => Interlocked.Increment(ref _callsInProgress);

    public void CallEnded() => Interlocked.Decrement(ref _callsInProgress);
}
