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

    /// <summary>
    /// How long an HTTP binding's channel factory, and so its <c>HttpClient</c> and the connections it pooled, serves
    /// new channels when <see cref="ChannelPoolOptions.FactoryLifetime"/> is not set: 5 minutes, after which a DNS
    /// change reaches new channels. WCF does not expose the handler's <c>PooledConnectionLifetime</c>.
    /// </summary>
    public static readonly TimeSpan HttpFactoryLifetime = TimeSpan.FromMinutes(5);

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
    private readonly EndpointAddress[] _addresses;
    private readonly BalancingOptions? _balancing;
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
        : this(binding, [address ?? throw new ArgumentNullException(nameof(address))], balancing: null, options, configureFactory, timeProvider, loggerFactory, meterFactory)
    {
    }

    /// <summary>
    /// Creates one pool over several addresses of the service: a <see cref="BalancedChannelPool{TChannel}"/> per set of
    /// credentials, which spreads leases over the addresses, ejects a failing or slow one, and leases elsewhere when an
    /// address cannot open a channel. Nothing is opened until warm-up or the first call.
    /// </summary>
    /// <param name="binding">The binding, as a <c>ClientBase</c> proxy would take it.</param>
    /// <param name="addresses">The service's addresses: at least one, all of the binding's scheme, none twice.</param>
    /// <param name="options">The pool settings; each address gets its share of the sizes. Defaults apply when null.</param>
    /// <param name="balancing">How leases are spread and addresses ejected and resolved. Defaults apply when null.</param>
    /// <param name="configureFactory">Configures each channel factory before it opens; runs once per address and credential pool.</param>
    /// <param name="timeProvider">The pools' source of time. Defaults to <see cref="TimeProvider.System"/>.</param>
    /// <param name="loggerFactory">Where the pools log.</param>
    /// <param name="meterFactory">Creates the pools' meters.</param>
    /// <exception cref="ArgumentNullException"><paramref name="binding"/> or <paramref name="addresses"/> is null.</exception>
    /// <exception cref="ArgumentException">
    /// The address list is empty, repeats an address or mixes schemes; an address's scheme is not the binding's; or
    /// <typeparamref name="TContract"/> is not a service contract.
    /// </exception>
    /// <exception cref="OptionsValidationException">An option breaks a rule; the message names it.</exception>
#pragma warning disable RS0026 // Overloads told apart by the address parameter's type, which is never optional.
    public ServiceChannelPool(
        Binding binding,
        IEnumerable<EndpointAddress> addresses,
        ChannelPoolOptions? options = null,
        BalancingOptions? balancing = null,
        Action<ChannelFactory<TContract>>? configureFactory = null,
        TimeProvider? timeProvider = null,
        ILoggerFactory? loggerFactory = null,
        IMeterFactory? meterFactory = null)
        : this(binding, addresses?.ToArray() ?? throw new ArgumentNullException(nameof(addresses)), balancing ?? new BalancingOptions(), options, configureFactory, timeProvider, loggerFactory, meterFactory)
    {
    }
#pragma warning restore RS0026

    private ServiceChannelPool(
        Binding binding,
        EndpointAddress[] addresses,
        BalancingOptions? balancing,
        ChannelPoolOptions? options,
        Action<ChannelFactory<TContract>>? configureFactory,
        TimeProvider? timeProvider,
        ILoggerFactory? loggerFactory,
        IMeterFactory? meterFactory)
    {
        ArgumentNullException.ThrowIfNull(binding);
        EndpointRules.EnsureServiceContract(typeof(TContract));
        if (Array.IndexOf(addresses, null) is var missing and >= 0)
        {
            throw new ArgumentException($"Address {missing} of the list is null: give every address of the service.", nameof(addresses));
        }

        if (addresses.Length == 0)
        {
            throw new ArgumentException("The address list is empty: give at least one address of the service.", nameof(addresses));
        }

        // The balanced pool checks the list itself (repeats, mixed schemes) when it is made below.
        foreach (var address in addresses)
        {
            EndpointRules.ValidateAddress(binding, address);
        }

        options ??= new ChannelPoolOptions();
        Name = options.Name ?? typeof(TContract).Name;
        Binding = binding;
        Address = addresses[0];
        _addresses = addresses;
        _balancing = balancing;
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

        var factory = CreateChannelFactory(credentials: null, Address);

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

    /// <summary>Gets the service's address; with several, the first.</summary>
    public EndpointAddress Address { get; }

    /// <summary>Gets the service's addresses, as configured.</summary>
    public IReadOnlyList<EndpointAddress> Addresses => Array.AsReadOnly(_addresses);

    /// <summary>Gets the endpoint of the default pool's (first) channel factory.</summary>
    public ServiceEndpoint Endpoint => _default.First.ChannelFactory.Endpoint;

    /// <summary>
    /// Gets the balanced pool for the endpoint's own credentials when this endpoint was created over several addresses
    /// (or with balancing options); null for a single address.
    /// </summary>
    public BalancedChannelPool<TContract>? BalancedPool => _default.Pool as BalancedChannelPool<TContract>;

    /// <summary>
    /// Gets the pool for the endpoint's own credentials, the one warm-up fills. Reconfigure through
    /// <see cref="Reconfigure"/>, not on this pool: that applies the adapter's defaults for what the options leave unset
    /// (the contract's lease mode, the binding's leases per channel) to every credential pool.
    /// </summary>
    /// <exception cref="InvalidOperationException">This endpoint balances over several addresses: use <see cref="BalancedPool"/>.</exception>
    public DefaultChannelPool<TContract> DefaultPool => _default.Single ?? throw NotSingle();

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
    /// <exception cref="InvalidOperationException">
    /// More than <see cref="MaxCredentialSets"/> distinct credentials were used; or this endpoint balances over several
    /// addresses, so there is no single pool: use <see cref="GetChannelPool"/>.
    /// </exception>
    public DefaultChannelPool<TContract> GetPool(ClientCredentials? credentials) =>
        (credentials is null ? _default : PooledFor(credentials)).Single ?? throw NotSingle();

    /// <summary>
    /// Gets the pool for <paramref name="credentials"/>, creating it the first time those credentials are seen: a
    /// <see cref="DefaultChannelPool{TChannel}"/> for one address, a <see cref="BalancedChannelPool{TChannel}"/> for several.
    /// </summary>
    /// <param name="credentials">A proxy's credentials; null for the endpoint's own.</param>
    /// <returns>The pool whose channels were opened with these credentials.</returns>
    /// <exception cref="InvalidOperationException">More than <see cref="MaxCredentialSets"/> distinct credentials were used.</exception>
    public IChannelPool<TContract> GetChannelPool(ClientCredentials? credentials) =>
        credentials is null ? _default.Pool : PooledFor(credentials).Pool;

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
        await Task.WhenAll(pools.SelectMany(p => p.AllFactories).Select(f => f.DisposeAsync().AsTask())).ConfigureAwait(false);
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
            foreach (var factory in pooled.AllFactories)
            {
                factory.ChannelFactory.Abort();
            }
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

    private Pooled PooledFor(ClientCredentials credentials)
    {
        var key = CredentialKey.From(credentials);
        return _byCredentials.TryGetValue(key, out var pooled) ? pooled : CreateCredentialPool(key, credentials);
    }

    private InvalidOperationException NotSingle() => new(
        $"Channel pool '{Name}' balances over {_addresses.Length} addresses, so it has no single pool: use GetChannelPool or BalancedPool.");

    private Pooled CreateCredentialPool(CredentialKey key, ClientCredentials credentials)
    {
        using (_createLock.EnterScope())
        {
            var current = _byCredentials;
            if (current.TryGetValue(key, out var existing))
            {
                return existing;
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

            var pooled = CreatePool(CreateChannelFactory(credentials, Address), credentials.Clone(), name);
            LogCredentialPoolCreated(_logger, Name, name);
            if (_paused)
            {
                pooled.Pool.Pause();
            }

            // Copy-on-write: lookups on the call path read the dictionary without the lock.
            _byCredentials = new Dictionary<CredentialKey, Pooled>(current) { [key] = pooled };
            return pooled;
        }
    }

    /// <summary>The span and measurement names of a call to <paramref name="method"/>, worked out at its first call that anybody listens to.</summary>
    internal CallTarget CallTargetOf(MethodInfo method) => _callTargets.GetOrAdd(method, static (method, endpoint) => CallTarget.For(endpoint, method), Endpoint);

    private ChannelFactory<TContract> CreateChannelFactory(ClientCredentials? credentials, EndpointAddress address)
    {
        var factory = new ChannelFactory<TContract>(Binding, address);
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
            () => Interlocked.Exchange(ref first, null) ?? CreateChannelFactory(credentials, Address), _timeProvider);
        if (_balancing is null)
        {
            var pool = new DefaultChannelPool<TContract>(
                adapter, OptionsFor(_options, name), _timeProvider, _loggerFactory, _meterFactory);
            return new Pooled(pool, pool, adapter, new());
        }

        // The first address reuses the factory already made (the endpoint, its credentials); each other address, and
        // each address resolution finds, gets one made the same way for its own address.
        var factories = new ConcurrentQueue<ServiceModelChannelFactory<TContract>>();
        var adapterTaken = 0;
        var balanced = new BalancedChannelPool<TContract>(
            _addresses.Select(a => a.Uri),
            address =>
            {
                var endpoint = AddressFor(address);
                if (endpoint.Uri == Address.Uri && Interlocked.Exchange(ref adapterTaken, 1) == 0)
                {
                    return adapter;
                }

                var made = new ServiceModelChannelFactory<TContract>(() => CreateChannelFactory(credentials, endpoint), _timeProvider);
                factories.Enqueue(made);
                return made;
            },
            OptionsFor(_options, name),
            _balancing,
            _timeProvider,
            _loggerFactory,
            _meterFactory);
        return new Pooled(balanced, null, adapter, factories);
    }

    /// <summary>
    /// The WCF address of one address the balanced pool opens to: the configured one, or, for an IP address resolved
    /// from a host name, that IP with the configured identity (or the host name's DNS identity, which a TLS binding
    /// checks the service's certificate against) and headers.
    /// </summary>
    private EndpointAddress AddressFor(PoolAddress address)
    {
        var configured = _addresses.FirstOrDefault(a => a.Uri == address.Uri)
            ?? _addresses.FirstOrDefault(a => string.Equals(a.Uri.DnsSafeHost, address.HostName, StringComparison.OrdinalIgnoreCase))
            ?? Address;
        if (configured.Uri == address.Uri)
        {
            return configured;
        }

        return new EndpointAddressBuilder(configured)
        {
            Uri = address.Uri,
            Identity = configured.Identity ?? (address.HostName is { } host ? new DnsEndpointIdentity(host) : null),
        }.ToEndpointAddress();
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
            FactoryLifetime = options.FactoryLifetime ?? (TraceContextPropagation.IsHttp(Binding) ? HttpFactoryLifetime : null),
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

    /// <summary>One credential set's pool.</summary>
    /// <param name="Pool">What proxies lease from.</param>
    /// <param name="Single">The same pool when there is one address; null when it balances over several.</param>
    /// <param name="First">The factory of the first address.</param>
    /// <param name="Factories">The factories of the other addresses, made as the balanced pool asks for them.</param>
    private sealed record Pooled(
        IChannelPool<TContract> Pool, DefaultChannelPool<TContract>? Single, ServiceModelChannelFactory<TContract> First, ConcurrentQueue<ServiceModelChannelFactory<TContract>> Factories)
    {
        public IEnumerable<ServiceModelChannelFactory<TContract>> AllFactories => Factories.Prepend(First);
    }
}
