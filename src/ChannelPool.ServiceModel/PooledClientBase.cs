using System.ServiceModel;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;

namespace ChannelPool.ServiceModel;

/// <summary>
/// A drop-in base class for WCF proxies: change a proxy's base class from <c>ClientBase&lt;TContract&gt;</c> to this,
/// and its calls run over channels a pool opened in advance. Nothing else in the proxy changes.
/// </summary>
/// <typeparam name="TContract">The service contract.</typeparam>
/// <example>
/// <code>
/// public class MyProxy : PooledClientBase&lt;ISomeService&gt;, ISomeService
/// {
///     public string Echo(string s) => Channel.Echo(s);
/// }
///
/// ChannelPoolFactory&lt;ISomeService&gt;.Initialize(binding, address);   // once, at start-up
/// var proxy = new MyProxy();
/// proxy.Echo("Hello");
/// proxy.Close();
/// </code>
/// </example>
/// <remarks>
/// <para>
/// A proxy leases one channel the first time it is used (or at <see cref="Open()"/>/<see cref="OpenAsync"/>) and keeps
/// it until <see cref="Close()"/>, <see cref="Abort"/> or <see cref="Dispose"/>. What release does depends on the
/// pool's <see cref="LeaseMode"/>: in <see cref="LeaseMode.Reuse"/> a healthy channel goes back to the pool, in
/// <see cref="LeaseMode.SingleUse"/> it is closed in the background, off the caller's path.
/// </para>
/// <para>
/// Credentials are read at first use, not at construction, because applications set them in between. Proxies whose
/// credentials differ lease from different pools and never share a channel.
/// </para>
/// <para>
/// A channel whose call failed with a <see cref="CommunicationException"/> or <see cref="TimeoutException"/>, or that
/// faulted, is discarded at release; a <see cref="FaultException"/> (the service's own answer) leaves it usable.
/// Unlike <c>ClientBase</c>, <see cref="Close()"/> and <see cref="Dispose"/> never throw for a faulted channel.
/// </para>
/// <para>
/// One proxy may be shared by several threads: they share its one channel, as they would a <c>ClientBase</c>'s. With
/// <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> above 1 (by default 16 on net.tcp), several proxies may also
/// hold one channel at once; a failed call or <see cref="Abort"/> on any of them retires that channel for all, and it
/// is aborted when the last one lets go. With <see cref="ChannelPoolOptions.LeaseSharing"/> at
/// <see cref="LeaseSharing.Adaptive"/>, the default, they share only while calls finish as fast as on channels of
/// their own, which a service that serves a session's calls one at a time (WCF's default <c>ConcurrencyMode.Single</c>)
/// does not allow.
/// </para>
/// </remarks>
public abstract class PooledClientBase<TContract> : ICommunicationObject, IDisposable, IAsyncDisposable
    where TContract : class
{
    private const int StateCreated = (int)CommunicationState.Created;
    private const int StateOpened = (int)CommunicationState.Opened;
    private const int StateClosed = (int)CommunicationState.Closed;

    private readonly Lock _sync = new();
    private ServiceChannelPool<TContract>? _endpointPool;
    private ClientCredentials? _credentials;
    private DefaultChannelPool<TContract>? _pool;
    private ChannelLease<TContract> _lease;
    private FailureTrackingChannel<TContract>? _channel;
    private int _state = StateCreated;

    /// <summary>
    /// Creates a proxy that leases from the pool registered for <typeparamref name="TContract"/> with
    /// <see cref="ChannelPoolFactory{TContract}.Initialize"/>. The pool is looked up at first use.
    /// </summary>
    protected PooledClientBase()
    {
    }

    /// <summary>
    /// Creates a proxy for a binding and address, like <c>ClientBase(binding, address)</c>. Proxies of this contract
    /// built with the same address and the same kind of binding share one set of pools, created by the first of them.
    /// </summary>
    /// <param name="binding">The binding.</param>
    /// <param name="remoteAddress">The service's address.</param>
    /// <exception cref="ArgumentNullException"><paramref name="binding"/> or <paramref name="remoteAddress"/> is null.</exception>
    protected PooledClientBase(Binding binding, EndpointAddress remoteAddress)
    {
        ArgumentNullException.ThrowIfNull(binding);
        ArgumentNullException.ThrowIfNull(remoteAddress);
        _endpointPool = ChannelPoolFactory<TContract>.ForEndpoint(binding, remoteAddress);
    }

    /// <summary>
    /// Creates a proxy for one endpoint of a generated client, like its <c>(EndpointConfiguration)</c> constructors: the
    /// pool's channel factories are named <paramref name="endpointName"/> and run <paramref name="configureEndpoint"/>
    /// (the generated <c>ConfigureEndpoint</c> partial method) once each, before they open. Proxies of this contract
    /// built for the same endpoint share one set of pools. Pooled twins written by <see cref="PooledClientAttribute"/> call it.
    /// </summary>
    /// <param name="binding">The binding, from the generated <c>GetBindingForEndpoint</c>.</param>
    /// <param name="remoteAddress">The service's address.</param>
    /// <param name="endpointName">The endpoint's name: the <c>EndpointConfiguration</c> value's name.</param>
    /// <param name="configureEndpoint">Configures the endpoint and its credentials; null for none.</param>
    /// <exception cref="ArgumentNullException"><paramref name="binding"/> or <paramref name="remoteAddress"/> is null.</exception>
    /// <exception cref="ArgumentException"><paramref name="endpointName"/> is null or empty.</exception>
    protected PooledClientBase(
        Binding binding, EndpointAddress remoteAddress, string endpointName, Action<ServiceEndpoint, ClientCredentials>? configureEndpoint)
    {
        ArgumentNullException.ThrowIfNull(binding);
        ArgumentNullException.ThrowIfNull(remoteAddress);
        ArgumentException.ThrowIfNullOrEmpty(endpointName);
        _endpointPool = ChannelPoolFactory<TContract>.ForEndpoint(binding, remoteAddress, endpointName, configureEndpoint);
    }

    /// <summary>Creates a proxy that leases from <paramref name="pool"/>; the constructor for dependency injection.</summary>
    /// <param name="pool">The endpoint's pools.</param>
    /// <exception cref="ArgumentNullException"><paramref name="pool"/> is null.</exception>
    protected PooledClientBase(ServiceChannelPool<TContract> pool)
    {
        ArgumentNullException.ThrowIfNull(pool);
        _endpointPool = pool;
    }

    /// <inheritdoc />
    public event EventHandler? Closed;

    /// <inheritdoc />
    public event EventHandler? Closing;

    /// <inheritdoc />
    public event EventHandler? Faulted;

    /// <inheritdoc />
    public event EventHandler? Opened;

    /// <inheritdoc />
    public event EventHandler? Opening;

    /// <summary>
    /// Gets the state: <see cref="CommunicationState.Created"/> before the lease, <see cref="CommunicationState.Opened"/>
    /// while it holds a healthy channel, <see cref="CommunicationState.Faulted"/> when that channel faulted or a call broke
    /// it, and <see cref="CommunicationState.Closed"/> after release.
    /// </summary>
    public CommunicationState State => Volatile.Read(ref _state) switch
    {
        StateOpened when _channel is { IsKnownUnusable: true } => CommunicationState.Faulted,
        var state => (CommunicationState)state,
    };

    /// <summary>Gets the pooled channels this proxy leases from.</summary>
    /// <exception cref="InvalidOperationException">The proxy was made with no pool, and none is initialized for the contract.</exception>
    public ServiceChannelPool<TContract> ServiceChannelPool => _endpointPool ??= ChannelPoolFactory<TContract>.Current
        ?? throw new InvalidOperationException(
            $"No channel pool is initialized for {typeof(TContract).Name}. Call ChannelPoolFactory<{typeof(TContract).Name}>.Initialize(binding, address) at start-up, " +
            "construct the proxy with a binding and address, or register it with AddPooledClient and resolve it from the container.");

    /// <summary>Gets the service endpoint: contract, binding and address.</summary>
    public ServiceEndpoint Endpoint => ServiceChannelPool.Endpoint;

    /// <summary>
    /// Gets this proxy's client credentials, a copy of the endpoint's own. Set them before the first call: they choose
    /// the pool the proxy leases from. Changes after the first call have no effect.
    /// </summary>
    public ClientCredentials ClientCredentials
    {
        get
        {
            using (_sync.EnterScope())
            {
                return _credentials ??= ServiceChannelPool.CloneDefaultCredentials();
            }
        }
    }

    /// <summary>Gets the leased WCF channel, leasing one first if needed.</summary>
    public IClientChannel InnerChannel
    {
        get
        {
            _ = Channel;
            return (IClientChannel)_channel!.Inner;
        }
    }

    /// <summary>
    /// Gets the leased channel, leasing one on first use (blocking while the pool is empty, for up to its
    /// <see cref="ChannelPoolOptions.AcquireTimeout"/>). Asynchronous callers can lease first with <see cref="OpenAsync"/>.
    /// </summary>
    /// <exception cref="ObjectDisposedException">The proxy was closed.</exception>
    /// <exception cref="ChannelPoolTimeoutException">No channel became free in time.</exception>
    /// <exception cref="ChannelPoolUnavailableException">The service cannot be reached and no channel is idle.</exception>
    protected TContract Channel => Volatile.Read(ref _state) == StateOpened ? _lease.Channel : LeaseBlocking(CancellationToken.None);

    /// <summary>Leases a channel now, blocking while the pool is empty.</summary>
    public void Open() => _ = LeaseBlocking(CancellationToken.None);

    /// <summary>Leases a channel now, waiting at most <paramref name="timeout"/>.</summary>
    /// <param name="timeout">How long to wait for a channel.</param>
    /// <exception cref="TimeoutException">No channel became free in time.</exception>
    public void Open(TimeSpan timeout)
    {
        using var cancel = new CancellationTokenSource(timeout);
        try
        {
            _ = LeaseBlocking(cancel.Token);
        }
        catch (OperationCanceledException ex) when (cancel.IsCancellationRequested)
        {
            throw new TimeoutException($"No channel of pool '{ServiceChannelPool.Name}' became free within {timeout}.", ex);
        }
    }

    /// <summary>Leases a channel without blocking a thread while the pool is empty.</summary>
    /// <param name="cancellationToken">Stops the wait.</param>
    /// <returns>A task that completes when the proxy holds a channel.</returns>
    public async Task OpenAsync(CancellationToken cancellationToken = default)
    {
        if (Volatile.Read(ref _state) == StateOpened)
        {
            return;
        }

        DefaultChannelPool<TContract> pool;
        using (_sync.EnterScope())
        {
            ThrowIfClosed();
            pool = SelectPool();
        }

        OnOpening();
        var lease = await pool.AcquireAsync(cancellationToken).ConfigureAwait(false);
        if (!TryKeep(lease))
        {
            // Another thread leased for this proxy meanwhile, or closed it: give this channel straight back.
            lease.Release();
            using (_sync.EnterScope())
            {
                ThrowIfClosed();
            }

            return;
        }

        OnOpened();
    }

    /// <summary>Releases the channel according to the pool's lease mode. Never throws for a faulted channel.</summary>
    public void Close() => Release(broken: false);

    /// <summary>Releases the channel; same as <see cref="Close()"/> (release never waits, so the timeout is not used).</summary>
    /// <param name="timeout">Not used.</param>
    public void Close(TimeSpan timeout) => Close();

    /// <summary>Releases the channel; same as <see cref="Close()"/>. Never waits: closing happens in the background.</summary>
    /// <returns>A completed task.</returns>
    public Task CloseAsync()
    {
        Close();
        return Task.CompletedTask;
    }

    /// <summary>Releases the channel as broken: the pool aborts it and never hands it out again.</summary>
    public void Abort() => Release(broken: true);

    /// <summary>Releases the channel; same as <see cref="Close()"/>.</summary>
    public void Dispose()
    {
        Close();
        GC.SuppressFinalize(this);
    }

    /// <summary>Releases the channel; same as <see cref="Close()"/>.</summary>
    /// <returns>A completed task.</returns>
    public ValueTask DisposeAsync()
    {
        Close();
        GC.SuppressFinalize(this);
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    public IAsyncResult BeginOpen(AsyncCallback? callback, object? state) => TaskToAsyncResult.Begin(OpenAsync(), callback, state);

    /// <inheritdoc />
    public IAsyncResult BeginOpen(TimeSpan timeout, AsyncCallback? callback, object? state) =>
        TaskToAsyncResult.Begin(OpenWithTimeoutAsync(timeout), callback, state);

    /// <inheritdoc />
    public void EndOpen(IAsyncResult result) => TaskToAsyncResult.End(result);

    /// <inheritdoc />
    public IAsyncResult BeginClose(AsyncCallback? callback, object? state) => TaskToAsyncResult.Begin(CloseAsync(), callback, state);

    /// <inheritdoc />
    public IAsyncResult BeginClose(TimeSpan timeout, AsyncCallback? callback, object? state) => BeginClose(callback, state);

    /// <inheritdoc />
    public void EndClose(IAsyncResult result) => TaskToAsyncResult.End(result);

    /// <summary>Lets a container hand the proxy its pool when the proxy was built with the parameterless constructor.</summary>
    internal void UseChannelPool(ServiceChannelPool<TContract> pool)
    {
        using (_sync.EnterScope())
        {
            if (_state == StateCreated && _pool is null)
            {
                _endpointPool = pool;
            }
        }
    }

    private TContract LeaseBlocking(CancellationToken cancellationToken)
    {
        using (_sync.EnterScope())
        {
            if (_state == StateOpened)
            {
                return _lease.Channel;
            }

            ThrowIfClosed();
            OnOpening();

            // Waiting under the proxy's own lock is deliberate: threads sharing one proxy share its one channel.
            var lease = SelectPool().Acquire(cancellationToken);
            Keep(lease);
        }

        OnOpened();
        return _lease.Channel;
    }

    private async Task OpenWithTimeoutAsync(TimeSpan timeout)
    {
        using var cancel = new CancellationTokenSource(timeout);
        try
        {
            await OpenAsync(cancel.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException ex) when (cancel.IsCancellationRequested)
        {
            throw new TimeoutException($"No channel of pool '{ServiceChannelPool.Name}' became free within {timeout}.", ex);
        }
    }

    private bool TryKeep(ChannelLease<TContract> lease)
    {
        using (_sync.EnterScope())
        {
            if (_state != StateCreated)
            {
                return false;
            }

            Keep(lease);
            return true;
        }
    }

    private void Keep(ChannelLease<TContract> lease)
    {
        _lease = lease;
        _channel = FailureTrackingChannel<TContract>.Of(lease.Channel);
        Volatile.Write(ref _state, StateOpened);
    }

    // Credentials are read here, at first use: the original pool's rule, since applications set them after construction.
    private DefaultChannelPool<TContract> SelectPool() => _pool ??= ServiceChannelPool.GetPool(_credentials);

    private void Release(bool broken)
    {
        ChannelLease<TContract> lease;
        FailureTrackingChannel<TContract>? channel;
        using (_sync.EnterScope())
        {
            if (_state == StateClosed)
            {
                return;
            }

            lease = _lease;
            channel = _channel;
            _lease = default;
            _channel = null;
            Volatile.Write(ref _state, StateClosed);
        }

        if (channel is not null && broken)
        {
            channel.MarkBroken();
        }

        // The pool itself checks the channel at release; this only tells the proxy's listeners.
        if (channel is { IsKnownUnusable: true })
        {
            Faulted?.Invoke(this, EventArgs.Empty);
        }

        Closing?.Invoke(this, EventArgs.Empty);
        lease.Release();
        Closed?.Invoke(this, EventArgs.Empty);
    }

    private void ThrowIfClosed()
    {
        if (_state == StateClosed)
        {
            throw new ObjectDisposedException(
                GetType().Name, "This proxy was closed and its channel went back to the pool. Create a new proxy for more calls: proxies are cheap, channels are pooled.");
        }
    }

    private void OnOpening() => Opening?.Invoke(this, EventArgs.Empty);

    private void OnOpened() => Opened?.Invoke(this, EventArgs.Empty);
}
