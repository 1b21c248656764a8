using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.ServiceModel;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace ChannelPool.ServiceModel;

/// <summary>
/// The pooled channels of one WCF service endpoint: one <see cref="DefaultChannelPool{TChannel}"/> for each set of client
/// credentials, as the original pool's <c>GetPool(ClientCredentials)</c> kept them. Proxies with different credentials
/// never share a channel. <see cref="PooledClientBase{TContract}"/> leases from it.
/// </summary>
/// <typeparam name="TContract">The service contract.</typeparam>
/// <remarks>
/// <para>
/// The default pool serves the credentials the endpoint was configured with, and is the one warm-up fills. A pool for
/// other credentials is created the first time a proxy uses them; its first caller waits for the first open.
/// </para>
/// <para>
/// The lease mode defaults to <see cref="ChannelPool.LeaseMode.SingleUse"/> when the contract requires sessions
/// (<see cref="SessionMode.Required"/>), so that no server-side session state passes from one caller to the next, and
/// to <see cref="ChannelPool.LeaseMode.Reuse"/> otherwise. Setting <see cref="ChannelPoolOptions.LeaseMode"/> overrides it.
/// Reused channels of a binding whose channel is a connection with a session (buffered net.tcp, named pipes) carry
/// up to 16 proxies at once by default, while that is no slower (<see cref="LeaseSharing.Adaptive"/>), unless the
/// contract requires sessions; other bindings give each proxy a channel. Setting
/// <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> overrides it.
/// </para>
/// <para>
/// Clearing, pausing and resuming act on every credential pool; a credential pool created while the endpoint is paused
/// starts paused. <see cref="ChannelPoolOptions.IsFatalError"/> left null means <see cref="FatalErrors.IsSecurityFailure"/>:
/// a failed security negotiation or a rejected security context clears every credential pool's channels of that pool.
/// </para>
/// </remarks>
public sealed partial class ServiceChannelPool<TContract> : IChannelPool
    where TContract : class
{
    /// <summary>
    /// The most distinct sets of credentials one endpoint pools channels for. Each set has its own pool of open
    /// channels, so an application that makes new credentials (or a new certificate validator) per proxy would open
    /// pools without end; it gets a clear error instead.
    /// </summary>
    public const int MaxCredentialSets = 64;

    private readonly Action<ChannelFactory<TContract>>? _configureFactory;
    private readonly TimeProvider? _timeProvider;
    private readonly ILoggerFactory? _loggerFactory;
    private readonly IMeterFactory? _meterFactory;
    private readonly ILogger _logger;
    private readonly bool _sessionful;
    private readonly bool _connectionSession;
    private readonly bool _contractRequiresSession;
    private readonly CredentialKey _defaultKey;
    private readonly ClientCredentials _defaultCredentials;
    private readonly Pooled _default;
    private readonly Lock _createLock = new();
    private volatile Dictionary<CredentialKey, Pooled> _byCredentials;
    private readonly ConditionalWeakTable<IHeldChannel, IHeldChannel> _held = new();
    private readonly ConcurrentDictionary<MethodInfo, CallTarget> _callTargets = new();
    private ChannelPoolOptions _options;
    private bool _paused;

    /// <summary>Creates the pools for a service endpoint. Nothing is opened until warm-up or the first call.</summary>
    /// <param name="binding">The binding, as a <c>ClientBase</c> proxy would take it.</param>
    /// <param name="address">The service's address.</param>
    /// <param name="options">The pool settings, shared by every credential pool. Defaults apply when null.</param>
    /// <param name="configureFactory">
    /// Configures each channel factory before it opens: default credentials, the service certificate check, endpoint
    /// behaviors. Runs once per credential pool.
    /// </param>
    /// <param name="timeProvider">The pools' source of time. Defaults to <see cref="TimeProvider.System"/>.</param>
    /// <param name="loggerFactory">Where the pools log.</param>
    /// <param name="meterFactory">Creates the pools' meters.</param>
    /// <exception cref="ArgumentNullException"><paramref name="binding"/> or <paramref name="address"/> is null.</exception>
    /// <exception cref="ArgumentException">
    /// <typeparamref name="TContract"/> is not a service contract, or the address's scheme is not the binding's.
    /// </exception>
    /// <exception cref="OptionsValidationException"><paramref name="options"/> break a rule, or conflict with the binding's timeouts.</exception>
    public ServiceChannelPool(
        Binding binding,
        EndpointAddress address,
        ChannelPoolOptions? options = null,
        Action<ChannelFactory<TContract>>? configureFactory = null,
        TimeProvider? timeProvider = null,
        ILoggerFactory? loggerFactory = null,
        IMeterFactory? meterFactory = null)
    {
        ArgumentNullException.ThrowIfNull(binding);
        ArgumentNullException.ThrowIfNull(address);
        EndpointRules.EnsureServiceContract(typeof(TContract));
        EndpointRules.ValidateAddress(binding, address);

        options ??= new ChannelPoolOptions();
        Name = options.Name ?? typeof(TContract).Name;
        Binding = binding;
        Address = address;
        _configureFactory = configureFactory;
        _timeProvider = timeProvider;
        _loggerFactory = loggerFactory;
        _meterFactory = meterFactory;
        _logger = loggerFactory?.CreateLogger("ChannelPool.ServiceModel") ?? NullLogger.Instance;
        _contractRequiresSession = EndpointRules.RequiresSession(typeof(TContract));
        _sessionful = EndpointRules.IsSessionful(binding);
        _connectionSession = EndpointRules.IsConnectionSession(binding);
        ThrowIfConflicting(options);
        _options = options;

        var factory = CreateChannelFactory(credentials: null);

        // Kept apart from the factory: an opened factory's credentials are read-only, and so are their clones.
        _defaultCredentials = factory.Credentials.Clone();
        _defaultKey = CredentialKey.From(_defaultCredentials);
        _default = CreatePool(factory, credentials: null, Name);
        _byCredentials = new Dictionary<CredentialKey, Pooled> { [_defaultKey] = _default };
    }

    /// <inheritdoc />
    public string Name { get; }

    /// <summary>Gets the binding every channel uses.</summary>
    public Binding Binding { get; }

    /// <summary>Gets the service's address.</summary>
    public EndpointAddress Address { get; }

    /// <summary>Gets the endpoint of the default pool's channel factory.</summary>
    public ServiceEndpoint Endpoint => _default.Factory.ChannelFactory.Endpoint;

    /// <summary>
    /// Gets the pool for the endpoint's own credentials, the one warm-up fills. Reconfigure through
    /// <see cref="Reconfigure"/>, not on this pool: that applies the adapter's defaults for what the options leave unset
    /// (the contract's lease mode, the binding's leases per channel) to every credential pool.
    /// </summary>
    public DefaultChannelPool<TContract> DefaultPool => _default.Pool;

    /// <inheritdoc />
    public LeaseMode LeaseMode => _default.Pool.LeaseMode;

    /// <inheritdoc />
    public int PoolSize => _default.Pool.PoolSize;

    /// <inheritdoc />
    public int RefillThreshold => _default.Pool.RefillThreshold;

    /// <inheritdoc />
    public int MaxChannels => _default.Pool.MaxChannels;

    /// <summary>
    /// Gets the pool for <paramref name="credentials"/>, creating it the first time those credentials are seen.
    /// </summary>
    /// <param name="credentials">A proxy's credentials; null for the endpoint's own.</param>
    /// <returns>The pool whose channels were opened with these credentials.</returns>
    /// <exception cref="InvalidOperationException">More than <see cref="MaxCredentialSets"/> distinct credentials were used.</exception>
    public DefaultChannelPool<TContract> GetPool(ClientCredentials? credentials)
    {
        if (credentials is null)
        {
            return _default.Pool;
        }

        var key = CredentialKey.From(credentials);
        return _byCredentials.TryGetValue(key, out var pooled) ? pooled.Pool : CreateCredentialPool(key, credentials);
    }

    /// <summary>Sums the counts of every credential pool; the breaker state is the worst among them.</summary>
    /// <returns>The counts at this moment.</returns>
    public ChannelPoolSnapshot GetSnapshot()
    {
        var pools = _byCredentials.Values;
        var total = default(ChannelPoolSnapshot) with { BreakerState = BreakerState.Closed };
        foreach (var pooled in pools)
        {
            var s = pooled.Pool.GetSnapshot();
            total = new ChannelPoolSnapshot(
                total.Idle + s.Idle,
                total.Leased + s.Leased,
                total.Opening + s.Opening,
                total.Closing + s.Closing,
                total.Waiting + s.Waiting,
                Worst(total.BreakerState, s.BreakerState),
                total.TotalOpened + s.TotalOpened,
                total.TotalClosed + s.TotalClosed)
            {
                IsPaused = total.IsPaused || s.IsPaused,
                IdleTarget = total.IdleTarget + s.IdleTarget,
            };
        }

        return total;
    }

    /// <summary>Starts filling the default pool and waits until <paramref name="readyChannels"/> channels are open.</summary>
    /// <param name="readyChannels">How many open channels to wait for.</param>
    /// <param name="cancellationToken">Stops the wait; filling goes on.</param>
    /// <returns>A task that completes when enough channels are open.</returns>
    public Task WarmUpAsync(int readyChannels, CancellationToken cancellationToken = default) =>
        _default.Pool.WarmUpAsync(readyChannels, cancellationToken);

    /// <summary>
    /// Clears every credential pool: each channel opened before this call retires (idle ones now, leased ones when their
    /// leases end) and new ones replace them. For example after the service's certificate was replaced.
    /// </summary>
    /// <param name="cancellationToken">Stops the wait for the closes; the clear stays in force.</param>
    /// <returns>A task that completes when every retired channel of every credential pool has closed.</returns>
    /// <exception cref="ObjectDisposedException">The endpoint's pools are draining or drained.</exception>
    public Task ClearAsync(CancellationToken cancellationToken = default)
    {
        var pools = _byCredentials.Values;
        return Task.WhenAll(pools.Select(pooled => pooled.Pool.ClearAsync(cancellationToken)).ToArray());
    }

    /// <summary>
    /// Pauses every credential pool, and those created from now on until <see cref="Resume"/>: nothing is opened or
    /// handed out (see <see cref="DefaultChannelPool{TChannel}.Pause"/>).
    /// </summary>
    /// <exception cref="InvalidOperationException">The endpoint is already paused; the message names it.</exception>
    /// <exception cref="ObjectDisposedException">The endpoint's pools are draining or drained.</exception>
    public void Pause() => SetPaused(paused: true);

    /// <summary>Resumes every credential pool (see <see cref="DefaultChannelPool{TChannel}.Resume"/>).</summary>
    /// <exception cref="InvalidOperationException">The endpoint is not paused; the message names it.</exception>
    /// <exception cref="ObjectDisposedException">The endpoint's pools are draining or drained.</exception>
#pragma warning disable CA1716 // The name of IChannelPool.Resume.
    public void Resume() => SetPaused(paused: false);
#pragma warning restore CA1716

    /// <summary>Drains every credential pool, then closes their channel factories.</summary>
    /// <param name="cancellationToken">Cuts the waiting short: what is left is aborted.</param>
    /// <returns>A task that completes when everything is closed.</returns>
    public async Task DrainAsync(CancellationToken cancellationToken = default)
    {
        ReleaseHeldChannels();
        var pools = _byCredentials.Values.ToArray();
        await Task.WhenAll(pools.Select(p => p.Pool.DrainAsync(cancellationToken))).ConfigureAwait(false);
        await Task.WhenAll(pools.Select(p => p.Factory.DisposeAsync().AsTask())).ConfigureAwait(false);
    }

    /// <summary>Applies new settings to every credential pool.</summary>
    /// <param name="options">The new settings.</param>
    /// <exception cref="OptionsValidationException">They break a rule or conflict with the binding; nothing changes.</exception>
    public void Reconfigure(ChannelPoolOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        ThrowIfConflicting(options);
        using (_createLock.EnterScope())
        {
            _options = options;
            foreach (var pooled in _byCredentials.Values)
            {
                pooled.Pool.Reconfigure(OptionsFor(options, pooled.Pool.Name));
            }
        }
    }

    /// <summary>Drains every pool; same as <see cref="DrainAsync"/>.</summary>
    /// <returns>A task that completes when everything is closed.</returns>
    public ValueTask DisposeAsync() => new(DrainAsync());

    /// <summary>Drains every pool, blocking; prefer <see cref="DisposeAsync"/>.</summary>
    public void Dispose()
    {
        ReleaseHeldChannels();
        foreach (var pooled in _byCredentials.Values)
        {
            pooled.Pool.Dispose();
            pooled.Factory.ChannelFactory.Abort();
        }
    }

    /// <summary>A copy of the endpoint's own credentials, for a proxy to change before its first call.</summary>
    internal ClientCredentials CloneDefaultCredentials() => _defaultCredentials.Clone();

    /// <summary>
    /// Gets whether a proxy keeps one channel for its life: when the contract requires sessions, which need it, and in
    /// <see cref="ChannelPool.LeaseMode.SingleUse"/>, whose point is one fresh channel (and server session) a proxy:
    /// leased per operation, each call would spend a channel, and <c>OpenAsync</c> one more. Other proxies lease per
    /// operation.
    /// </summary>
    internal bool HoldsChannelPerProxy => _contractRequiresSession || LeaseMode == LeaseMode.SingleUse;

    /// <summary>
    /// Remembers, without keeping it alive, a channel a proxy holds for its life, so that a drain can take it back
    /// rather than wait for a proxy nobody will close.
    /// </summary>
    internal void Track(IHeldChannel held) => _held.AddOrUpdate(held, held);

    // A proxy's channel that no call is using goes back now, aborted; one under a call goes when that call ends.
    private void ReleaseHeldChannels()
    {
        foreach (var (held, _) in _held)
        {
            held.ReleaseWhenIdle();
        }
    }

    private void SetPaused(bool paused)
    {
        using (_createLock.EnterScope())
        {
            if (_paused == paused)
            {
                throw new InvalidOperationException(paused
                    ? $"Channel pool '{Name}' is already paused. Resume it first; check its snapshot's IsPaused to pause only a running pool."
                    : $"Channel pool '{Name}' is not paused, so it cannot be resumed. Check its snapshot's IsPaused to resume only a paused pool.");
            }

            foreach (var pooled in _byCredentials.Values)
            {
                if (paused)
                {
                    pooled.Pool.Pause();
                }
                else
                {
                    pooled.Pool.Resume();
                }
            }

            _paused = paused;
        }
    }

    private DefaultChannelPool<TContract> CreateCredentialPool(CredentialKey key, ClientCredentials credentials)
    {
        using (_createLock.EnterScope())
        {
            var current = _byCredentials;
            if (current.TryGetValue(key, out var existing))
            {
                return existing.Pool;
            }

            if (current.Count >= MaxCredentialSets)
            {
                throw new InvalidOperationException(
                    $"Channel pool '{Name}' already holds pools for {MaxCredentialSets} distinct sets of client credentials, the most it keeps. " +
                    "Each set has pooled channels of its own: reuse credentials (and one certificate validator object) across proxies instead of making new ones per proxy.");
            }

            var name = $"{Name}[{key}]";
            for (var n = 2; current.Values.Any(p => p.Pool.Name == name); n++)
            {
                name = $"{Name}[{key}#{n}]";
            }

            var pooled = CreatePool(CreateChannelFactory(credentials), credentials.Clone(), name);
            LogCredentialPoolCreated(_logger, Name, name);
            if (_paused)
            {
                pooled.Pool.Pause();
            }

            // Copy-on-write: lookups on the call path read the dictionary without the lock.
            _byCredentials = new Dictionary<CredentialKey, Pooled>(current) { [key] = pooled };
            return pooled.Pool;
        }
    }

    /// <summary>The span and measurement names of a call to <paramref name="method"/>, worked out at its first call that anybody listens to.</summary>
    internal CallTarget CallTargetOf(MethodInfo method) => _callTargets.GetOrAdd(method, static (method, endpoint) => CallTarget.For(endpoint, method), Endpoint);

    private ChannelFactory<TContract> CreateChannelFactory(ClientCredentials? credentials)
    {
        var factory = new ChannelFactory<TContract>(Binding, Address);
        _configureFactory?.Invoke(factory);
        factory.Endpoint.EndpointBehaviors.Add(new TraceContextPropagation(TraceContextPropagation.IsHttp(Binding)));
        if (credentials is not null)
        {
            // A proxy's credentials replace the factory's, as ClientBase's own ClientCredentials would.
            factory.Endpoint.EndpointBehaviors.Remove(typeof(ClientCredentials));
            factory.Endpoint.EndpointBehaviors.Add(credentials.Clone());
        }

        return factory;
    }

    private Pooled CreatePool(ChannelFactory<TContract> factory, ClientCredentials? credentials, string name)
    {
        // The first factory is the one already made; a clear renews it with one made the same way.
        var first = factory;
        var adapter = new ServiceModelChannelFactory<TContract>(
            () => Interlocked.Exchange(ref first, null) ?? CreateChannelFactory(credentials), _timeProvider);
        var pool = new DefaultChannelPool<TContract>(
            adapter, OptionsFor(_options, name), _timeProvider, _loggerFactory, _meterFactory);
        return new Pooled(pool, adapter);
    }

    /// <summary>
    /// One credential pool's options: the endpoint's, under the pool's own name, with, unless set, the contract's lease
    /// mode, the binding's leases per channel and the adapter's fatal-error rule.
    /// </summary>
    private ChannelPoolOptions OptionsFor(ChannelPoolOptions options, string name)
    {
        var leaseMode = options.LeaseMode ?? (_contractRequiresSession ? LeaseMode.SingleUse : LeaseMode.Reuse);
        return new(options)
        {
            Name = name,
            LeaseMode = leaseMode,
            MaxLeasesPerChannel = options.MaxLeasesPerChannel ??
                (leaseMode == LeaseMode.Reuse && _connectionSession && !_contractRequiresSession ? EndpointRules.LeasesPerConnection : 1),
            IsFatalError = options.IsFatalError ?? FatalErrors.IsSecurityFailure,
            LeakDetectionThreshold = options.LeakDetectionThreshold ?? DefaultLeakDetectionThreshold(),
        };
    }

    /// <summary>
    /// Proxies of a contract that requires sessions hold a channel for their life, so a proxy nobody closed holds one
    /// until it is finalized: leak detection is on for them, past the longest a session may idle at the service
    /// (the binding's ReceiveTimeout) and two call timeouts. A lease per operation lasts one call, released in a
    /// finally; capturing each call's stack would cost more than the call's own client CPU on net.tcp, so it stays off.
    /// </summary>
    private TimeSpan? DefaultLeakDetectionThreshold()
    {
        if (!_contractRequiresSession)
        {
            return null;
        }

        // A binding may say "infinite" with TimeSpan.MaxValue; the option takes at most a day.
        var day = TimeSpan.FromDays(1).Ticks;
        return TimeSpan.FromTicks(Math.Min(day, Math.Max(2 * Math.Min(Binding.SendTimeout.Ticks, day), Binding.ReceiveTimeout.Ticks)));
    }

    private void ThrowIfConflicting(ChannelPoolOptions options)
    {
        var conflicts = EndpointRules.Conflicts(Name, typeof(TContract), Binding, _sessionful, options);
        if (conflicts.Count > 0)
        {
            throw new OptionsValidationException(Name, typeof(ChannelPoolOptions), conflicts);
        }
    }

    private static BreakerState Worst(BreakerState a, BreakerState b) => Rank(a) >= Rank(b) ? a : b;

    private static int Rank(BreakerState state) => state switch
    {
        BreakerState.Closed => 0,
        BreakerState.HalfOpen => 1,
        _ => 2,
    };

    [LoggerMessage(301, LogLevel.Information, "Channel pool '{PoolName}' opened a pool for other client credentials: '{CredentialPoolName}'.")]
    private static partial void LogCredentialPoolCreated(ILogger logger, string poolName, string credentialPoolName);

    private sealed record Pooled(DefaultChannelPool<TContract> Pool, ServiceModelChannelFactory<TContract> Factory);
}
