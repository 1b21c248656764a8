using System.Diagnostics.Metrics;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace ChannelPool;

/// <summary>
/// One pool over several addresses of a service: a <see cref="DefaultChannelPool{TChannel}"/> per address, sharing
/// this pool's options and limits, a balancer that chooses the address of each lease, outlier ejection, failover of a
/// lease whose address cannot open a channel, and (optionally) DNS re-resolution.
/// </summary>
/// <remarks>
/// <para>
/// Each address's pool gets an even share of <see cref="ChannelPoolOptions.PoolSize"/>,
/// <see cref="ChannelPoolOptions.MaxChannels"/> and <see cref="ChannelPoolOptions.RefillThreshold"/>, rounded up, and
/// is named <c>{Name}@{host}:{port}</c>, so its logs and measurements carry the address. Every other option applies to
/// each address's pool as it is, including the open resilience, so each address has a breaker of its own.
/// </para>
/// <para>
/// A lease fails over only when nothing was sent: its address's pool could not hand it a channel (the breaker is open
/// or the address was ejected while it waited). A call that has gone out on a channel is never repeated by the pool.
/// </para>
/// </remarks>
/// <typeparam name="TChannel">The pooled channel type.</typeparam>
public sealed partial class BalancedChannelPool<TChannel> : IChannelPool<TChannel>
    where TChannel : class
{
    private readonly Func<PoolAddress, IPooledChannelFactory<TChannel>> _factoryFor;
    private readonly BalancingOptions _balancing;
    private readonly TimeProvider _timeProvider;
    private readonly ILoggerFactory? _loggerFactory;
    private readonly IMeterFactory? _meterFactory;
    private readonly ILogger _logger;
    private readonly Lock _lock = new();
    private readonly ITimer _outlierTimer;
    private ChannelPoolOptions _options;

    // Copy-on-write under _lock; the lease path reads them without it.
    private volatile PoolEndpoint<TChannel>[] _endpoints = [];
    private volatile PoolEndpoint<TChannel>[] _routable = [];
    private int _nextInTurn = -1;
    private bool _disposed;

    /// <summary>Creates a pool over <paramref name="addresses"/> and starts filling each address's share in the background.</summary>
    /// <param name="addresses">The service's addresses: at least one, all absolute, all of one scheme, none twice.</param>
    /// <param name="factoryFor">Makes the channel factory for one address.</param>
    /// <param name="options">The pool's options; each address's pool gets its share of the sizes.</param>
    /// <param name="balancing">How leases are spread and addresses ejected; null for the defaults.</param>
    /// <param name="timeProvider">The clock; null for the system clock.</param>
    /// <param name="loggerFactory">Where logs go; null for none.</param>
    /// <param name="meterFactory">Where measurements go; null for the shared meter.</param>
    /// <exception cref="ArgumentException">The address list is empty, has a relative or repeated address, or mixes schemes.</exception>
    /// <exception cref="OptionsValidationException">An option is out of range; the message names it.</exception>
    public BalancedChannelPool(
        IEnumerable<Uri> addresses,
        Func<PoolAddress, IPooledChannelFactory<TChannel>> factoryFor,
        ChannelPoolOptions options,
        BalancingOptions? balancing = null,
        TimeProvider? timeProvider = null,
        ILoggerFactory? loggerFactory = null,
        IMeterFactory? meterFactory = null)
    {
        ArgumentNullException.ThrowIfNull(addresses);
        ArgumentNullException.ThrowIfNull(factoryFor);
        ArgumentNullException.ThrowIfNull(options);
        var configured = ValidateAddresses(addresses, nameof(addresses));
        Name = options.Name ?? typeof(TChannel).Name;
        var validation = new ChannelPoolOptionsValidator().Validate(Name, options);
        if (validation.Failed)
        {
            throw new OptionsValidationException(Name, typeof(ChannelPoolOptions), validation.Failures);
        }

        _balancing = (balancing ?? new BalancingOptions()).Clone();
        if (_balancing.Validate() is { Count: > 0 } failures)
        {
            throw new OptionsValidationException(Name, typeof(BalancingOptions), failures.Select(f => $"Pool '{Name}': {nameof(BalancingOptions)}.{f}"));
        }

        _factoryFor = factoryFor;
        _options = options;
        _timeProvider = timeProvider ?? TimeProvider.System;
        _loggerFactory = loggerFactory;
        _meterFactory = meterFactory;
        _logger = loggerFactory?.CreateLogger("ChannelPool.Balancing") ?? NullLogger.Instance;
        Configured = configured;

        var initial = _balancing.ResolveHostNames ? ResolveInitial(configured) : configured.Select(uri => new PoolAddress(uri)).ToList();
        using (_lock.EnterScope())
        {
            foreach (var address in initial)
            {
                Join_NoLock(address, initial.Count);
            }

            Publish_NoLock();
        }

        _outlierTimer = _timeProvider.CreateTimer(
            static state => ((BalancedChannelPool<TChannel>)state!).CheckOutliers(), this, _balancing.OutlierInterval, _balancing.OutlierInterval);
        _resolveTimer = _balancing.ResolveHostNames
            ? _timeProvider.CreateTimer(static state => _ = ((BalancedChannelPool<TChannel>)state!).ResolveAsync(), this, _balancing.ResolveInterval, _balancing.ResolveInterval)
            : null;
    }

    /// <inheritdoc/>
    public string Name { get; }

    /// <summary>The addresses as configured, before any resolution.</summary>
    public IReadOnlyList<Uri> Configured { get; }

    /// <inheritdoc/>
    public LeaseMode LeaseMode => _endpoints.FirstOrDefault()?.Pool.LeaseMode ?? LeaseMode.Reuse;

    /// <inheritdoc/>
    public int PoolSize => _options.PoolSize;

    /// <inheritdoc/>
    public int RefillThreshold => _endpoints.Sum(e => e.Pool.RefillThreshold);

    /// <inheritdoc/>
    public int MaxChannels => _options.MaxChannels;

    internal int ConsecutiveFailuresToEject => _balancing.ConsecutiveFailures;

    /// <summary>Each address as it stands now: its state, calls in flight, calls, failures and its own pool's counts.</summary>
    /// <returns>One entry per address, draining ones included.</returns>
    public IReadOnlyList<BalancedEndpointSnapshot> GetEndpoints()
    {
        var now = _timeProvider.GetTimestamp();
        var endpoints = _endpoints;

        // A pool's snapshot asks Polly for its breaker state, under Polly's lock: taken before this lock, so the two never nest.
        var pools = Array.ConvertAll(endpoints, e => e.Pool.GetSnapshot());
        using (_lock.EnterScope())
        {
            return endpoints.Select((e, i) => e.Snapshot(now, _timeProvider, pools[i])).ToArray();
        }
    }

    /// <inheritdoc/>
    public ValueTask<ChannelLease<TChannel>> AcquireAsync(CancellationToken cancellationToken = default)
    {
        var endpoint = Pick(tried: null) ?? throw NoAddress();
        var pending = endpoint.Pool.AcquireAsync(cancellationToken);
        return pending.IsCompletedSuccessfully ? pending : AcquireWithFailoverAsync(endpoint, pending, cancellationToken);
    }

    /// <inheritdoc/>
    public ChannelLease<TChannel> Acquire(CancellationToken cancellationToken = default)
    {
        List<PoolEndpoint<TChannel>>? tried = null;
        var endpoint = Pick(tried) ?? throw NoAddress();
        while (true)
        {
            try
            {
                return endpoint.Pool.Acquire(cancellationToken);
            }
            catch (Exception ex) when (CanFailOver(ex, cancellationToken))
            {
                (tried ??= []).Add(endpoint);
                endpoint = Pick(tried) ?? throw Unavailable(ex);
                LogFailover(_logger, Name, tried[^1].Pool.Name, endpoint.Pool.Name);
            }
        }
    }

    /// <summary>The address <paramref name="lease"/> was leased at, or null when it is not a lease of this pool.</summary>
    /// <param name="lease">A lease this pool handed out, active or not.</param>
    /// <returns>Its address.</returns>
    public PoolAddress? AddressOf(ChannelLease<TChannel> lease) =>
        lease.Entry?.Pool is { } pool ? Array.Find(_endpoints, e => e.Pool == pool)?.Address : null;

    /// <summary>
    /// Leases a channel at any address but <paramref name="avoid"/>, if another takes leases: for a caller whose call
    /// failed there before anything was sent (the connection was refused), to try once more elsewhere.
    /// </summary>
    /// <param name="avoid">The address to keep away from; null for none.</param>
    /// <param name="cancellationToken">Stops the wait.</param>
    /// <returns>The lease.</returns>
    public ValueTask<ChannelLease<TChannel>> AcquireElsewhereAsync(PoolAddress? avoid, CancellationToken cancellationToken = default)
    {
        var endpoint = PickAvoiding(avoid) ?? throw NoAddress();
        return AcquireWithFailoverAsync(endpoint, endpoint.Pool.AcquireAsync(cancellationToken), cancellationToken);
    }

    /// <inheritdoc cref="AcquireElsewhereAsync"/>
    public ChannelLease<TChannel> AcquireElsewhere(PoolAddress? avoid, CancellationToken cancellationToken = default)
    {
        var endpoint = PickAvoiding(avoid) ?? throw NoAddress();
        try
        {
            return endpoint.Pool.Acquire(cancellationToken);
        }
        catch (Exception ex) when (CanFailOver(ex, cancellationToken))
        {
            return Acquire(cancellationToken);
        }
    }

    /// <inheritdoc/>
    /// <remarks>The sums over every address; the breaker is closed while any address that takes leases has it closed.</remarks>
    public ChannelPoolSnapshot GetSnapshot()
    {
        var total = default(ChannelPoolSnapshot);
        var breaker = BreakerState.Closed;
        var anyClosed = false;
        foreach (var endpoint in _endpoints)
        {
            var s = endpoint.Pool.GetSnapshot();
            if (endpoint.State == EndpointState.Active)
            {
                anyClosed |= s.BreakerState == BreakerState.Closed;
                breaker = s.BreakerState == BreakerState.Closed ? breaker : s.BreakerState;
            }

            total = new ChannelPoolSnapshot(
                total.Idle + s.Idle,
                total.Leased + s.Leased,
                total.Opening + s.Opening,
                total.Closing + s.Closing,
                total.Waiting + s.Waiting,
                BreakerState.Closed,
                total.TotalOpened + s.TotalOpened,
                total.TotalClosed + s.TotalClosed)
            {
                IsPaused = total.IsPaused || s.IsPaused,
                IdleTarget = total.IdleTarget + s.IdleTarget,
            };
        }

        return total with { BreakerState = anyClosed ? BreakerState.Closed : breaker };
    }

    /// <inheritdoc/>
    public Task WarmUpAsync(int readyChannels, CancellationToken cancellationToken = default)
    {
        if (readyChannels < 0 || readyChannels > PoolSize)
        {
            throw new ArgumentOutOfRangeException(
                nameof(readyChannels), readyChannels, $"Must be between 0 and the pool size ({PoolSize}) of pool '{Name}'.");
        }

        // Each routable address warms its share; an address that cannot open is the breaker's and the ejection's business.
        var endpoints = _routable;
        var share = endpoints.Length == 0 ? 0 : (readyChannels + endpoints.Length - 1) / endpoints.Length;
        return Task.WhenAll(endpoints.Select(e => e.Pool.WarmUpAsync(Math.Min(share, e.Pool.PoolSize), cancellationToken)));
    }

    /// <inheritdoc/>
    public Task DrainAsync(CancellationToken cancellationToken = default)
    {
        StopTimers();
        return Task.WhenAll(_endpoints.Select(e => e.Pool.DrainAsync(cancellationToken)));
    }

    /// <inheritdoc/>
    public Task ClearAsync(CancellationToken cancellationToken = default) =>
        Task.WhenAll(_endpoints.Select(e => e.Pool.ClearAsync(cancellationToken)));

    /// <inheritdoc/>
    public void Pause()
    {
        foreach (var endpoint in _endpoints)
        {
            endpoint.Pool.Pause();
        }
    }

    /// <inheritdoc/>
#pragma warning disable CA1716 // The name of IChannelPool.Resume.
    public void Resume()
#pragma warning restore CA1716
    {
        foreach (var endpoint in _endpoints)
        {
            endpoint.Pool.Resume();
        }
    }

    /// <inheritdoc/>
    public void Reconfigure(ChannelPoolOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var validation = new ChannelPoolOptionsValidator().Validate(Name, options);
        if (validation.Failed)
        {
            throw new OptionsValidationException(Name, typeof(ChannelPoolOptions), validation.Failures);
        }

        using (_lock.EnterScope())
        {
            _options = options;
            Reshare_NoLock();
        }
    }

    /// <inheritdoc/>
    public async ValueTask DisposeAsync()
    {
        await DrainAsync().ConfigureAwait(false);
        Dispose();
    }

    /// <inheritdoc/>
    public void Dispose()
    {
        PoolEndpoint<TChannel>[] endpoints;
        using (_lock.EnterScope())
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
            endpoints = _endpoints;
        }

        StopTimers();
        foreach (var endpoint in endpoints)
        {
            endpoint.Pool.Dispose();
        }
    }

    /// <summary>Checks an address list: at least one, all absolute, one scheme, none twice. Returns it as a list.</summary>
    internal static List<Uri> ValidateAddresses(IEnumerable<Uri> addresses, string parameterName)
    {
        var list = addresses.ToList();
        if (list.Count == 0)
        {
            throw new ArgumentException("The address list is empty: give at least one address of the service.", parameterName);
        }

        for (var i = 0; i < list.Count; i++)
        {
            if (list[i] is not { IsAbsoluteUri: true } uri)
            {
                throw new ArgumentException($"Address {i} of the list is {(list[i] is null ? "null" : $"'{list[i]}', which is not absolute")}: give every address as an absolute URI.", parameterName);
            }

            if (!string.Equals(uri.Scheme, list[0].Scheme, StringComparison.OrdinalIgnoreCase))
            {
                throw new ArgumentException($"The address list mixes schemes: '{list[0]}' is {list[0].Scheme} but '{uri}' is {uri.Scheme}. One pool serves one binding; give every address the same scheme.", parameterName);
            }

            if (list.Take(i).Any(earlier => earlier.Equals(uri)))
            {
                throw new ArgumentException($"The address list has '{uri}' twice: give each address once.", parameterName);
            }
        }

        return list;
    }

    /// <summary>An address's failures reached the limit: ejects it unless too many are out already. Returns whether it did.</summary>
    internal bool Eject(PoolEndpoint<TChannel> endpoint, string reason)
    {
        TimeSpan duration;
        using (_lock.EnterScope())
        {
            if (_disposed || endpoint.State != EndpointState.Active)
            {
                return false;
            }

            var live = _endpoints.Count(e => e.State != EndpointState.Draining);
            var out_ = _endpoints.Count(e => e.State is EndpointState.Ejected or EndpointState.Probing);
            var allowed = live < 2 ? 0 : Math.Max(1, live * _balancing.MaxEjectionPercent / 100);
            if (out_ >= allowed)
            {
                endpoint.ResetFailures();
                LogEjectionRefused(_logger, Name, endpoint.Pool.Name, reason, out_, live);
                NoteAllFailing_NoLock();
                return false;
            }

            endpoint.Ejections++;
            duration = TimeSpan.FromTicks(Math.Min(_balancing.MaxEjectionTime.Ticks, _balancing.BaseEjectionTime.Ticks * endpoint.Ejections));
            endpoint.EjectedUntil = _timeProvider.GetTimestamp() + (long)(duration.TotalSeconds * _timeProvider.TimestampFrequency);
            endpoint.State = EndpointState.Ejected;
            endpoint.ResetFailures();
            Publish_NoLock();
        }

        LogEjected(_logger, Name, endpoint.Pool.Name, reason, duration, endpoint.Ejections);

        // Its waiters lease elsewhere; its idle channels go, and the ones in use go as they come back.
        endpoint.Pool.RefuseWaiters($"its address was ejected after {reason}.");
        _ = endpoint.Pool.ClearAsync();
        return true;
    }

    /// <summary>A probing address opened a channel: it takes leases again.</summary>
    internal void Readmit(PoolEndpoint<TChannel> endpoint)
    {
        using (_lock.EnterScope())
        {
            if (_disposed || endpoint.State != EndpointState.Probing)
            {
                return;
            }

            endpoint.ResetAverage(MedianAverage_NoLock(endpoint));
            endpoint.State = EndpointState.Active;
            endpoint.ReadmittedAt = _timeProvider.GetTimestamp();
            Publish_NoLock();
        }

        LogReadmitted(_logger, Name, endpoint.Pool.Name);
    }

    /// <summary>
    /// The outlier check, every <see cref="BalancingOptions.OutlierInterval"/>: ends ejections that are over, ejects an
    /// address far slower than the others, and lets a healthy address's ejection count decay.
    /// </summary>
    private void CheckOutliers()
    {
        var now = _timeProvider.GetTimestamp();
        var probe = new List<PoolEndpoint<TChannel>>();
        var intervals = new List<(PoolEndpoint<TChannel> Endpoint, long Calls, TimeSpan Mean)>();
        using (_lock.EnterScope())
        {
            if (_disposed)
            {
                return;
            }

            foreach (var endpoint in _endpoints)
            {
                var (calls, mean, failures) = endpoint.TakeInterval();
                switch (endpoint.State)
                {
                    case EndpointState.Ejected when now >= endpoint.EjectedUntil:
                        endpoint.State = EndpointState.Probing;
                        probe.Add(endpoint);
                        break;
                    case EndpointState.Active:
                        // Healthy through the interval: one ejection is forgiven. An address let back in during this
                        // check's own interval has not been tried yet (a late or doubled timer tick would otherwise
                        // forgive it the moment it returns), so it must have been back half an interval at least.
                        if (failures == 0 && endpoint.Ejections > 0 && _timeProvider.GetElapsedTime(endpoint.ReadmittedAt, now) >= _balancing.OutlierInterval / 2)
                        {
                            endpoint.Ejections--;
                        }

                        // No call in a whole interval: its average may be stale from a slow spell; give it the others'.
                        if (calls == 0)
                        {
                            endpoint.ResetAverage(MedianAverage_NoLock(endpoint));
                        }

                        if (calls >= _balancing.LatencyMinimumCalls)
                        {
                            intervals.Add((endpoint, calls, mean));
                        }

                        break;
                }
            }
        }

        foreach (var endpoint in probe)
        {
            LogProbing(_logger, Name, endpoint.Pool.Name);
            if (endpoint.Pool.GetSnapshot().Idle > 0)
            {
                Readmit(endpoint);
            }
            else
            {
                _ = endpoint.Pool.WarmUpAsync(readyChannels: 0);
            }
        }

        if (_balancing.LatencyEjectionFactor > 0 && intervals.Count >= 2)
        {
            foreach (var (endpoint, _, mean) in intervals)
            {
                var others = intervals.Where(i => i.Endpoint != endpoint).Select(i => i.Mean.Ticks).Order().ToArray();
                var median = others.Length % 2 == 1 ? others[others.Length / 2] : (others[(others.Length / 2) - 1] + others[others.Length / 2]) / 2;
                if (median > 0 && mean.Ticks > _balancing.LatencyEjectionFactor * median)
                {
                    Eject(endpoint, $"a mean call time of {mean.TotalMilliseconds:0.#} ms against the others' {TimeSpan.FromTicks(median).TotalMilliseconds:0.#} ms");
                }
            }
        }
    }

    private PoolEndpoint<TChannel>? PickAvoiding(PoolAddress? avoid) =>
        avoid is null ? Pick(tried: null)
        : Pick([.. _endpoints.Where(e => e.Address.Equals(avoid))]) ?? Pick(tried: null);

    private PoolEndpoint<TChannel>? Pick(List<PoolEndpoint<TChannel>>? tried)
    {
        var routable = _routable;
        if (tried is not null || routable.Length == 0)
        {
            return PickSlow(tried);
        }

        if (routable.Length == 1)
        {
            return routable[0];
        }

        if (_balancing.Policy == BalancingPolicy.RoundRobin)
        {
            return routable[(int)((uint)Interlocked.Increment(ref _nextInTurn) % (uint)routable.Length)];
        }

        var first = Random.Shared.Next(routable.Length);
        var second = Random.Shared.Next(routable.Length - 1);
        if (second >= first)
        {
            second++;
        }

        var a = routable[first];
        var b = routable[second];
        return b.Cost < a.Cost ? b : a;
    }

    /// <summary>
    /// A pick that skips the addresses already tried, or finds none routable: then, as Envoy's panic mode does, every
    /// address that is not draining is a candidate, so the pool still serves when all of them are ejected.
    /// </summary>
    private PoolEndpoint<TChannel>? PickSlow(List<PoolEndpoint<TChannel>>? tried)
    {
        var candidates = _routable.Where(e => tried?.Contains(e) != true).ToList();
        if (candidates.Count == 0)
        {
            candidates = _endpoints.Where(e => e.State != EndpointState.Draining && tried?.Contains(e) != true).ToList();
        }

        return candidates.Count == 0 ? null : candidates.MinBy(e => (e.Cost, Random.Shared.Next()));
    }

    private async ValueTask<ChannelLease<TChannel>> AcquireWithFailoverAsync(
        PoolEndpoint<TChannel> endpoint, ValueTask<ChannelLease<TChannel>> pending, CancellationToken cancellationToken)
    {
        List<PoolEndpoint<TChannel>>? tried = null;
        while (true)
        {
            try
            {
                return await pending.ConfigureAwait(false);
            }
            catch (Exception ex) when (CanFailOver(ex, cancellationToken))
            {
                (tried ??= []).Add(endpoint);
                endpoint = Pick(tried) ?? throw Unavailable(ex);
                LogFailover(_logger, Name, tried[^1].Pool.Name, endpoint.Pool.Name);
                pending = endpoint.Pool.AcquireAsync(cancellationToken);
            }
        }
    }

    /// <summary>
    /// Whether a failed lease may go to another address: its address could not open a channel or was ejected (or left)
    /// while it waited. Nothing was sent. A timeout is not failed over: the caller's wait is spent.
    /// </summary>
    private bool CanFailOver(Exception error, CancellationToken cancellationToken) =>
        !cancellationToken.IsCancellationRequested && !_disposed
        && error is ChannelPoolUnavailableException { Snapshot.IsPaused: false } or ObjectDisposedException;

    private ChannelPoolUnavailableException Unavailable(Exception last) =>
        new($"Pool '{Name}' could not lease a channel at any of its {_endpoints.Length} addresses; the last one said: {last.Message}", last);

    private ObjectDisposedException NoAddress() => new(GetType().FullName, $"Channel pool '{Name}' is disposed.");

    /// <summary>The median of the other active addresses' average call times; 0 when none has one yet.</summary>
    private long MedianAverage_NoLock(PoolEndpoint<TChannel> except)
    {
        var averages = _endpoints.Where(e => e != except && e.State == EndpointState.Active && e.AverageTicks > 0).Select(e => e.AverageTicks).Order().ToArray();
        return averages.Length == 0 ? 0 : averages[averages.Length / 2];
    }

    private void Join_NoLock(PoolAddress address, int count)
    {
        var pool = new DefaultChannelPool<TChannel>(
            _factoryFor(address), ShareFor(_options, count, address), _timeProvider, _loggerFactory, _meterFactory);
        var endpoint = new PoolEndpoint<TChannel>(this, address, pool);
        endpoint.ResetAverage(MedianAverage_NoLock(endpoint));
        _endpoints = [.. _endpoints, endpoint];
        _ = pool.WarmUpAsync(readyChannels: 0);
    }

    /// <summary>Rebuilds the routable list after a state change.</summary>
    private void Publish_NoLock() => _routable = _endpoints.Where(e => e.State == EndpointState.Active).ToArray();

    /// <summary>Gives each address's pool its share again after the address list or the options changed.</summary>
    private void Reshare_NoLock()
    {
        var live = _endpoints.Where(e => e.State != EndpointState.Draining).ToArray();
        foreach (var endpoint in live)
        {
            endpoint.Pool.Reconfigure(ShareFor(_options, live.Length, endpoint.Address));
        }
    }

    private ChannelPoolOptions ShareFor(ChannelPoolOptions options, int count, PoolAddress address)
    {
        var poolSize = Math.Max(1, Share(options.PoolSize, count));
        return new ChannelPoolOptions(options)
        {
            Name = $"{Name}@{address.Uri.Authority}",
            PoolSize = poolSize,
            MaxChannels = Math.Max(poolSize, Share(options.MaxChannels, count)),
            RefillThreshold = options.RefillThreshold is { } refill ? Math.Min(poolSize - 1, Share(refill, count)) : null,
        };
    }

    private static int Share(int total, int count) => (total + count - 1) / count;

    private void StopTimers()
    {
        _outlierTimer.Dispose();
        _resolveTimer?.Dispose();
    }

    [LoggerMessage(401, LogLevel.Warning, "Channel pool '{PoolName}' ejected '{Address}' after {Reason}, for {Duration} (ejection {Ejections}).")]
    private static partial void LogEjected(ILogger logger, string poolName, string address, string reason, TimeSpan duration, int ejections);

    [LoggerMessage(402, LogLevel.Warning, "Channel pool '{PoolName}' kept '{Address}' in after {Reason}: {Ejected} of {Addresses} addresses are out already, the most MaxEjectionPercent allows.")]
    private static partial void LogEjectionRefused(ILogger logger, string poolName, string address, string reason, int ejected, int addresses);

    [LoggerMessage(403, LogLevel.Information, "Channel pool '{PoolName}' probes '{Address}': its ejection is over, and it takes leases once a channel to it opens.")]
    private static partial void LogProbing(ILogger logger, string poolName, string address);

    [LoggerMessage(404, LogLevel.Information, "Channel pool '{PoolName}' let '{Address}' back in.")]
    private static partial void LogReadmitted(ILogger logger, string poolName, string address);

    [LoggerMessage(405, LogLevel.Debug, "Channel pool '{PoolName}' could not lease at '{From}' and leases at '{To}' instead; nothing was sent.")]
    private static partial void LogFailover(ILogger logger, string poolName, string from, string to);
}
