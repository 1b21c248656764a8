using System.Collections.Concurrent;

namespace ChannelPool.Testing.ServiceModel;

/// <summary>
/// What a test service counts, so that a test or the perf console can see where each expensive open happened.
/// Every member is safe to read from any thread while the server runs.
/// </summary>
public sealed class ServerCounters
{
    private long _connections;
    private long _tlsHandshakes;
    private long _sessionsStarted;
    private long _sessionsEnded;
    private long _calls;
    private long _sessionCallsStarted;
    private long _endRecords;
    private long _negotiations;
    private long _cancels;
    private long _securityFaults;
    private long _peakSessionCalls;
    private readonly ConcurrentQueue<string> _traceParents = new();

    /// <summary>Gets the TCP connections accepted.</summary>
    public long Connections => Interlocked.Read(ref _connections);

    /// <summary>Gets the TLS handshakes completed.</summary>
    public long TlsHandshakes => Interlocked.Read(ref _tlsHandshakes);

    /// <summary>Gets the sessions started (net.tcp: a completed preamble; HTTP: none, HTTP bindings have no sessions).</summary>
    public long SessionsStarted => Interlocked.Read(ref _sessionsStarted);

    /// <summary>Gets the sessions that ended, gracefully (end record) or not.</summary>
    public long SessionsEnded => Interlocked.Read(ref _sessionsEnded);

    /// <summary>Gets the sessions a client ended politely: net.tcp end records received.</summary>
    public long EndRecords => Interlocked.Read(ref _endRecords);

    /// <summary>Gets the sessions started and not yet ended.</summary>
    public long ActiveSessions => SessionsStarted - SessionsEnded;

    /// <summary>Gets the operations dispatched.</summary>
    public long Calls => Interlocked.Read(ref _calls);

    /// <summary>Gets the security context tokens issued (WS-SecureConversation negotiations that succeeded).</summary>
    public long Negotiations => Interlocked.Read(ref _negotiations);

    /// <summary>Gets the security context tokens cancelled by their client (a channel's close).</summary>
    public long Cancels => Interlocked.Read(ref _cancels);

    /// <summary>Gets the requests the WS-SecureConversation endpoint refused with a fault.</summary>
    public long SecurityFaults => Interlocked.Read(ref _securityFaults);

    /// <summary>
    /// Gets the most calls one session has had in progress at once since the service started: on a session-based
    /// endpoint (net.tcp, WS-SecureConversation) served with <see cref="ServiceConcurrency.Single"/> it never passes 1,
    /// however many calls the client sends at once; with <see cref="ServiceConcurrency.Multiple"/> it shows how many
    /// overlapped. 0 until a call arrives on a session.
    /// </summary>
    public long PeakCallsPerSession => Interlocked.Read(ref _peakSessionCalls);

    /// <summary>
    /// Gets the calls a session-based endpoint has taken in, counted as each starts (<see cref="Calls"/> counts them as
    /// they are answered), so a test can wait until a long call is in the service.
    /// </summary>
    public long SessionCallsStarted => Interlocked.Read(ref _sessionCallsStarted);

    /// <summary>
    /// Gets the W3C <c>traceparent</c> values that came with requests, oldest first, the most recent
    /// <see cref="TraceParentsKept"/>: the HTTP header on the HTTPS host, the SOAP header in
    /// <see cref="TestContract.TraceContextNamespace"/> on the net.tcp host. A service that reads them can continue the
    /// caller's trace; a test reads them to see that it could.
    /// </summary>
    public IReadOnlyCollection<string> TraceParents => _traceParents;

    /// <summary>How many <see cref="TraceParents"/> are kept: enough for a test, bounded for a perf run.</summary>
    public const int TraceParentsKept = 256;

    /// <summary>Takes all counts at once, for before/after comparisons.</summary>
    /// <returns>The counts now.</returns>
    public ServerCountsSnapshot Snapshot() => new(Connections, TlsHandshakes, SessionsStarted, SessionsEnded, Calls, EndRecords, Negotiations);

    internal void ConnectionAccepted() => Interlocked.Increment(ref _connections);

    internal void TlsHandshakeCompleted() => Interlocked.Increment(ref _tlsHandshakes);

    internal void SessionStarted() => Interlocked.Increment(ref _sessionsStarted);

    internal void SessionEnded() => Interlocked.Increment(ref _sessionsEnded);

    internal void CallDispatched() => Interlocked.Increment(ref _calls);

    internal void EndRecordReceived() => Interlocked.Increment(ref _endRecords);

    internal void TraceParentReceived(string traceParent)
    {
        _traceParents.Enqueue(traceParent);
        while (_traceParents.Count > TraceParentsKept && _traceParents.TryDequeue(out _))
        {
        }
    }

    internal void NegotiationCompleted() => Interlocked.Increment(ref _negotiations);

    internal void TokenCancelled() => Interlocked.Increment(ref _cancels);

    internal void SecurityFaultSent() => Interlocked.Increment(ref _securityFaults);

    /// <summary>Notes how many calls a session has in progress, now that one more has started.</summary>
    internal void SessionCallsInProgress(long inProgress)
    {
        Interlocked.Increment(ref _sessionCallsStarted);
        long peak = Interlocked.Read(ref _peakSessionCalls);
        while (inProgress > peak)
        {
            long seen = Interlocked.CompareExchange(ref _peakSessionCalls, inProgress, peak);
            if (seen == peak)
            {
                return;
            }

            peak = seen;
        }
    }
}

/// <summary>A server's counts at one moment.</summary>
/// <param name="Connections">TCP connections accepted.</param>
/// <param name="TlsHandshakes">TLS handshakes completed.</param>
/// <param name="SessionsStarted">Sessions started.</param>
/// <param name="SessionsEnded">Sessions ended.</param>
/// <param name="Calls">Operations dispatched.</param>
/// <param name="EndRecords">Sessions the client ended with an end record.</param>
/// <param name="Negotiations">Security context tokens issued (WS-SecureConversation).</param>
public readonly record struct ServerCountsSnapshot(long Connections, long TlsHandshakes, long SessionsStarted, long SessionsEnded, long Calls, long EndRecords = 0, long Negotiations = 0)
{
    /// <summary>Subtracts an earlier snapshot: what happened between the two.</summary>
    /// <param name="later">The later snapshot.</param>
    /// <param name="earlier">The earlier snapshot.</param>
    /// <returns>The differences.</returns>
    public static ServerCountsSnapshot operator -(ServerCountsSnapshot later, ServerCountsSnapshot earlier) => new(
        later.Connections - earlier.Connections,
        later.TlsHandshakes - earlier.TlsHandshakes,
        later.SessionsStarted - earlier.SessionsStarted,
        later.SessionsEnded - earlier.SessionsEnded,
        later.Calls - earlier.Calls,
        later.EndRecords - earlier.EndRecords,
        later.Negotiations - earlier.Negotiations);

    /// <summary>Subtracts an earlier snapshot.</summary>
    /// <param name="earlier">The earlier snapshot.</param>
    /// <returns>The differences.</returns>
    public ServerCountsSnapshot Subtract(ServerCountsSnapshot earlier) => this - earlier;
}
