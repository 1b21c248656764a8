using System.Collections.Concurrent;

namespace ChannelPool.Testing;

/// <summary>
/// A channel factory for deterministic engine tests. Opens succeed at once unless the test holds them
/// (<see cref="HoldOpens"/>) or makes them fail (<see cref="OpenFailure"/>); it counts everything it is asked to do.
/// </summary>
public sealed class FakeChannelFactory : IPooledChannelFactory<FakeChannel>
{
    private readonly ConcurrentDictionary<long, FakeChannel> _channels = new();
    private readonly Lock _gateLock = new();
    private SemaphoreSlim? _gate;
    private long _nextId;
    private int _openAttempts;
    private int _opensInFlight;
    private int _maxOpensInFlight;
    private int _closeCalls;
    private int _abortCalls;
    private int _renewals;

    /// <summary>
    /// Gets or sets a function asked on every open attempt for the error to throw; when it (or the property) is null,
    /// the attempt succeeds.
    /// </summary>
    public Func<Exception?>? OpenFailure { get; set; }

    /// <summary>Gets or sets a hook run by every graceful close, for example to make closes slow or fail.</summary>
    public Func<FakeChannel, CancellationToken, ValueTask>? OnClose { get; set; }

    /// <summary>Gets every channel opened so far.</summary>
    public IReadOnlyCollection<FakeChannel> Channels => _channels.Values.OrderBy(c => c.Id).ToList();

    /// <summary>Gets how many opens were attempted, including failed ones.</summary>
    public int OpenAttempts => Volatile.Read(ref _openAttempts);

    /// <summary>Gets how many channels opened successfully.</summary>
    public int Opened => _channels.Count;

    /// <summary>Gets the most opens that were ever in flight at once.</summary>
    public int MaxOpensInFlight => Volatile.Read(ref _maxOpensInFlight);

    /// <summary>Gets how many opens are in flight now.</summary>
    public int OpensInFlight => Volatile.Read(ref _opensInFlight);

    /// <summary>Gets how many graceful closes were requested.</summary>
    public int CloseCalls => Volatile.Read(ref _closeCalls);

    /// <summary>Gets how many aborts were requested.</summary>
    public int AbortCalls => Volatile.Read(ref _abortCalls);

    /// <summary>Gets the channels that are still open.</summary>
    public IReadOnlyList<FakeChannel> OpenChannels => Channels.Where(c => c.IsOpen).ToList();

    /// <summary>Makes every later open wait until <see cref="AllowOpens"/> lets it through.</summary>
    public void HoldOpens()
    {
        lock (_gateLock)
        {
            _gate ??= new SemaphoreSlim(0);
        }
    }

    /// <summary>Lets <paramref name="count"/> held opens through.</summary>
    /// <param name="count">How many opens may proceed.</param>
    public void AllowOpens(int count)
    {
        lock (_gateLock)
        {
            _gate?.Release(count);
        }
    }

    /// <summary>Stops holding opens and lets every waiting one through.</summary>
    public void StopHoldingOpens()
    {
        SemaphoreSlim? gate;
        lock (_gateLock)
        {
            gate = _gate;
            _gate = null;
        }

        gate?.Release(1000);
    }

    /// <inheritdoc />
    public async ValueTask<FakeChannel> OpenAsync(CancellationToken cancellationToken)
    {
        Interlocked.Increment(ref _openAttempts);
        var inFlight = Interlocked.Increment(ref _opensInFlight);
        UpdateMax(inFlight);
        try
        {
            SemaphoreSlim? gate;
            lock (_gateLock)
            {
                gate = _gate;
            }

            if (gate is not null)
            {
                await gate.WaitAsync(cancellationToken);
            }

            cancellationToken.ThrowIfCancellationRequested();
            if (OpenFailure?.Invoke() is { } failure)
            {
                throw failure;
            }

            var channel = new FakeChannel(Interlocked.Increment(ref _nextId));
            _channels[channel.Id] = channel;
            return channel;
        }
        finally
        {
            Interlocked.Decrement(ref _opensInFlight);
        }
    }

    /// <inheritdoc />
    public bool IsUsable(FakeChannel channel) => channel.IsOpen && !channel.IsFaulted;

    /// <inheritdoc />
    public async ValueTask CloseAsync(FakeChannel channel, CancellationToken cancellationToken)
    {
        Interlocked.Increment(ref _closeCalls);
        if (OnClose is { } onClose)
        {
            await onClose(channel, cancellationToken);
        }

        channel.MarkClosed();
    }

    /// <inheritdoc />
    public void Abort(FakeChannel channel)
    {
        Interlocked.Increment(ref _abortCalls);
        channel.MarkAborted();
    }

    /// <summary>Gets how many times the pool renewed this factory.</summary>
    public int Renewals => Volatile.Read(ref _renewals);

    /// <inheritdoc />
    public void Renew() => Interlocked.Increment(ref _renewals);

    private void UpdateMax(int inFlight)
    {
        var max = Volatile.Read(ref _maxOpensInFlight);
        while (inFlight > max && Interlocked.CompareExchange(ref _maxOpensInFlight, inFlight, max) != max)
        {
            max = Volatile.Read(ref _maxOpensInFlight);
        }
    }
}
