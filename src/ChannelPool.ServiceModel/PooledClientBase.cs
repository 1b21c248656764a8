using System.Reflection;
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
///     public Task&lt;string&gt; EchoAsync(string s) => Channel.EchoAsync(s);
/// }
///
/// ChannelPoolFactory&lt;ISomeService&gt;.Initialize(binding, address);   // once, at start-up
/// var proxy = new MyProxy();
/// var reply = await proxy.EchoAsync("Hello");
/// await proxy.CloseAsync();
/// </code>
/// </example>
/// <remarks>
/// <para>
/// <b>A lease per operation.</b> Unless the contract requires sessions, every call through <see cref="Channel"/> leases
/// a channel when it starts and gives it back when it ends, so a proxy holds nothing between calls: one that is never
/// closed, because a call threw before <see cref="Close()"/> ran, costs the pool nothing. A <c>Task</c> operation waits
/// for a channel without blocking a thread; a synchronous operation blocks its own thread while it waits, as WCF's own
/// synchronous calls block for the reply. What release does depends on the pool's <see cref="LeaseMode"/>: in
/// <see cref="LeaseMode.Reuse"/> a healthy channel goes back to the pool, in <see cref="LeaseMode.SingleUse"/> it is
/// closed in the background, off the caller's path.
/// </para>
/// <para>
/// <b>A lease per proxy</b>, where a session needs one channel for the proxy's life: a contract with
/// <see cref="SessionMode.Required"/> leases at its first call (or <see cref="Open()"/>) and keeps the channel until
/// <see cref="Close()"/>, <see cref="Abort"/> or <see cref="Dispose"/>; reading <see cref="InnerChannel"/> pins a channel
/// to any proxy the same way, since the caller then works with that one channel. A proxy that holds a channel and is
/// dropped without being closed gives it back, aborted, when the garbage collector finalizes it, and a drain or host stop
/// takes it back at once unless a call is running on it.
/// </para>
/// <para>
/// Credentials are read at first use, not at construction, because applications set them in between. Proxies whose
/// credentials differ lease from different pools and never share a channel.
/// </para>
/// <para>
/// A channel whose call failed with a <see cref="CommunicationException"/> or <see cref="TimeoutException"/>, or that
/// faulted, is discarded at release; a <see cref="FaultException"/> (the service's own answer) leaves it usable. With a
/// lease per operation the next call simply gets another channel. Unlike <c>ClientBase</c>, <see cref="Close()"/> and
/// <see cref="Dispose"/> never throw for a faulted channel.
/// </para>
/// <para>
/// One proxy may be shared by several threads. With <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> above 1 (by
/// default 16 on net.tcp), several calls may also run on one channel at once; a failed call or <see cref="Abort"/>
/// retires that channel for all, and it is aborted when the last one lets go. With
/// <see cref="ChannelPoolOptions.LeaseSharing"/> at <see cref="LeaseSharing.Adaptive"/>, the default, they share only
/// while calls finish as fast as on channels of their own, which a service that serves a session's calls one at a time
/// (WCF's default <c>ConcurrencyMode.Single</c>) does not allow.
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
    private IChannelPool<TContract>? _pool;
    private TContract? _operations;
    private HeldLease? _held;
    private bool? _holdsChannel;
    private int _state = StateCreated;
    private volatile bool _aborted;

    /// <summary>
    /// Creates a proxy that leases from the pool registered for <typeparamref name="TContract"/> with
    /// <c>ChannelPoolFactory&lt;TContract&gt;.Initialize</c>. The pool is looked up at first use.
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
    /// Gets the state: <see cref="CommunicationState.Created"/> before the first call or <see cref="Open()"/>,
    /// <see cref="CommunicationState.Opened"/> after it, <see cref="CommunicationState.Faulted"/> while the proxy holds a
    /// channel (a lease per proxy) that faulted or a call broke, and <see cref="CommunicationState.Closed"/> after
    /// <see cref="Close()"/> or <see cref="Abort"/>.
    /// </summary>
    public CommunicationState State => Volatile.Read(ref _state) switch
    {
        StateOpened when _held is { Channel.IsKnownUnusable: true } => CommunicationState.Faulted,
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

    /// <summary>
    /// Gets a WCF channel pinned to this proxy until <see cref="Close()"/>: reading it switches the proxy to a lease per
    /// proxy, leasing now if needed and blocking while the pool is empty, so that what the caller does with the channel
    /// (an <c>OperationContextScope</c>, its <c>OperationTimeout</c>) applies to this proxy's calls.
    /// </summary>
    /// <exception cref="ObjectDisposedException">The proxy was closed.</exception>
    /// <exception cref="ChannelPoolTimeoutException">No channel became free within the pool's <see cref="ChannelPoolOptions.AcquireTimeout"/>.</exception>
    /// <exception cref="ChannelPoolUnavailableException">The service cannot be reached and no channel is idle, or the pool is paused.</exception>
    public IClientChannel InnerChannel
    {
        get
        {
            using (_sync.EnterScope())
            {
                ThrowIfClosed();
                _holdsChannel = true;
            }

            return (IClientChannel)HoldBlocking(CancellationToken.None).Channel.Inner;
        }
    }

    /// <summary>
    /// Gets the contract to call the service through. Each call leases a channel for as long as it runs (a lease per
    /// operation), or, for a contract that requires sessions, runs on the channel this proxy holds. A <c>Task</c>
    /// operation never blocks a thread while it waits for a channel; a synchronous one blocks its own thread, for up to
    /// the pool's <see cref="ChannelPoolOptions.AcquireTimeout"/>.
    /// </summary>
    /// <remarks>
    /// A call throws <see cref="ObjectDisposedException"/> once the proxy is closed, <see cref="ChannelPoolTimeoutException"/>
    /// when no channel became free in time, and <see cref="ChannelPoolUnavailableException"/> when the service cannot be
    /// reached and no channel is idle, or the pool is paused (see <see cref="ChannelPoolOptions.AcquireWhilePaused"/>).
    /// </remarks>
    protected TContract Channel => _operations ?? CreateOperations();

    /// <summary>
    /// Makes the proxy ready, as <c>ClientBase.Open</c> does: with a lease per operation it waits until the pool can hand
    /// out a channel and gives it straight back, so an unreachable service fails here; with a lease per proxy it leases
    /// the proxy's channel now. Blocks while the pool is empty.
    /// </summary>
    /// <exception cref="ObjectDisposedException">The proxy was closed.</exception>
    /// <exception cref="ChannelPoolTimeoutException">No channel became free in time.</exception>
    /// <exception cref="ChannelPoolUnavailableException">The service cannot be reached and no channel is idle.</exception>
    public void Open() => OpenBlocking(CancellationToken.None);

    /// <summary>Makes the proxy ready (see <see cref="Open()"/>), waiting at most <paramref name="timeout"/>.</summary>
    /// <param name="timeout">How long to wait for a channel.</param>
    /// <exception cref="TimeoutException">No channel became free in time.</exception>
    public void Open(TimeSpan timeout)
    {
        using var cancel = new CancellationTokenSource(timeout);
        try
        {
            OpenBlocking(cancel.Token);
        }
        catch (OperationCanceledException ex) when (cancel.IsCancellationRequested)
        {
            throw new TimeoutException($"No channel of pool '{ServiceChannelPool.Name}' became free within {timeout}.", ex);
        }
    }

    /// <summary>Makes the proxy ready (see <see cref="Open()"/>) without blocking a thread while the pool is empty.</summary>
    /// <param name="cancellationToken">Stops the wait.</param>
    /// <returns>A task that completes when the proxy is ready.</returns>
    public async Task OpenAsync(CancellationToken cancellationToken = default)
    {
        if (HoldsChannel())
        {
            _ = await HoldAsync(cancellationToken).ConfigureAwait(false);
            return;
        }

        var pool = StartUsing();
        (await pool.AcquireAsync(cancellationToken).ConfigureAwait(false)).Release();
    }

    /// <summary>
    /// Closes the proxy: a channel it holds goes back according to the pool's lease mode; calls still running keep
    /// theirs until they end. Never throws for a faulted channel.
    /// </summary>
    public void Close() => Release(broken: false);

    /// <summary>Closes the proxy; same as <see cref="Close()"/> (release never waits, so the timeout is not used).</summary>
    /// <param name="timeout">Not used.</param>
    public void Close(TimeSpan timeout) => Close();

    /// <summary>Closes the proxy; same as <see cref="Close()"/>. Never waits: closing happens in the background.</summary>
    /// <returns>A completed task.</returns>
    public Task CloseAsync()
    {
        Close();
        return Task.CompletedTask;
    }

    /// <summary>
    /// Closes the proxy and marks its channels broken: a channel it holds, and those of calls still running when they
    /// end, are aborted and never handed out again.
    /// </summary>
    public void Abort() => Release(broken: true);

    /// <summary>Closes the proxy; same as <see cref="Close()"/>.</summary>
    public void Dispose()
    {
        Close();
        GC.SuppressFinalize(this);
    }

    /// <summary>Closes the proxy; same as <see cref="Close()"/>.</summary>
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

    /// <summary>The call's span, or nothing at all (no clock read, no allocation) when nobody listens.</summary>
    internal CallSpan StartSpan(MethodInfo operation) =>
        CallTelemetry.IsListening ? CallSpan.Start(ServiceChannelPool.CallTargetOf(operation)) : default;

    private TContract CreateOperations()
    {
        var operations = OperationChannel<TContract>.Create(this);
        return Interlocked.CompareExchange(ref _operations, operations, null) ?? operations;
    }

    /// <summary>Whether this proxy holds one channel for its life: its contract requires sessions, or <see cref="InnerChannel"/> pinned one.</summary>
    internal bool HoldsChannel() => _holdsChannel ??= ServiceChannelPool.HoldsChannelPerProxy;

    /// <summary>The pool a call leases from, once the proxy is known to be open; raises Opening and Opened at first use.</summary>
    internal IChannelPool<TContract> StartUsing()
    {
        // Every call after the first: the proxy is open and its pool chosen, so no lock. A Close racing this call
        // lets it run, as a Close just after the lock would have.
        if (Volatile.Read(ref _state) == StateOpened && Volatile.Read(ref _pool) is { } chosen)
        {
            return chosen;
        }

        IChannelPool<TContract> pool;
        var first = false;
        using (_sync.EnterScope())
        {
            ThrowIfClosed();
            pool = SelectPool();
            if (_state == StateCreated)
            {
                Volatile.Write(ref _state, StateOpened);
                first = true;
            }
        }

        if (first)
        {
            Opening?.Invoke(this, EventArgs.Empty);
            Opened?.Invoke(this, EventArgs.Empty);
        }

        return pool;
    }

    internal void EndOperation(ChannelLease<TContract> lease)
    {
        // A proxy aborted while the call ran: the call's channel goes too, as ClientBase.Abort would take it down.
        if (_aborted)
        {
            lease.MarkBroken();
        }

        lease.Release();
    }

    private void OpenBlocking(CancellationToken cancellationToken)
    {
        if (HoldsChannel())
        {
            _ = HoldBlocking(cancellationToken);
            return;
        }

        StartUsing().Acquire(cancellationToken).Release();
    }

    internal HeldLease HoldBlocking(CancellationToken cancellationToken)
    {
        if (Volatile.Read(ref _held) is { } held)
        {
            return held;
        }

        using (_sync.EnterScope())
        {
            if (_held is { } existing)
            {
                return existing;
            }

            ThrowIfClosed();
            Opening?.Invoke(this, EventArgs.Empty);

            // Waiting under the proxy's own lock is deliberate: threads sharing one proxy share its one channel.
            Keep(SelectPool().Acquire(cancellationToken));
        }

        Opened?.Invoke(this, EventArgs.Empty);
        return _held!;
    }

    internal async ValueTask<HeldLease> HoldAsync(CancellationToken cancellationToken)
    {
        if (Volatile.Read(ref _held) is { } held)
        {
            return held;
        }

        IChannelPool<TContract> pool;
        using (_sync.EnterScope())
        {
            ThrowIfClosed();
            pool = SelectPool();
        }

        Opening?.Invoke(this, EventArgs.Empty);
        var lease = await pool.AcquireAsync(cancellationToken).ConfigureAwait(false);
        using (_sync.EnterScope())
        {
            if (_held is { } existing || _state == StateClosed)
            {
                // Another call leased for this proxy meanwhile, or it was closed: give this channel straight back.
                lease.Release();
                ThrowIfClosed();
                return _held!;
            }

            Keep(lease);
        }

        Opened?.Invoke(this, EventArgs.Empty);
        return _held!;
    }

    private void Keep(ChannelLease<TContract> lease)
    {
        var held = new HeldLease(lease);
        ServiceChannelPool.Track(held);
        Volatile.Write(ref _held, held);
        Volatile.Write(ref _state, StateOpened);
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

    // Credentials are read here, at first use: the original pool's rule, since applications set them after construction.
    private IChannelPool<TContract> SelectPool() => _pool ??= ServiceChannelPool.GetChannelPool(_credentials);

    private void Release(bool broken)
    {
        HeldLease? held;
        using (_sync.EnterScope())
        {
            if (_state == StateClosed)
            {
                return;
            }

            held = _held;
            _held = null;
            _aborted = broken;
            Volatile.Write(ref _state, StateClosed);
        }

        // The pool itself checks the channel at release; this only tells the proxy's listeners.
        if (held is { Channel.IsKnownUnusable: true })
        {
            Faulted?.Invoke(this, EventArgs.Empty);
        }

        Closing?.Invoke(this, EventArgs.Empty);
        held?.Release(broken);
        Closed?.Invoke(this, EventArgs.Empty);
    }

    private void ThrowIfClosed()
    {
        if (_state == StateClosed)
        {
            throw new ObjectDisposedException(
                GetType().Name, "This proxy was closed. Create a new proxy for more calls: proxies are cheap, channels are pooled.");
        }
    }

    /// <summary>
    /// A channel held for a proxy's life. Finalizable on its own, so only proxies that hold a channel pay for
    /// finalization: when such a proxy is dropped without being closed, the channel is aborted and its slot returned.
    /// </summary>
    internal sealed class HeldLease(ChannelLease<TContract> lease) : IHeldChannel
    {
        private int _calls;
        private int _released;
        private volatile bool _releaseWhenIdle;

        public FailureTrackingChannel<TContract> Channel { get; } = FailureTrackingChannel<TContract>.Of(lease.Channel);

        public long ChannelId { get; } = lease.ChannelId;

        ~HeldLease()
        {
            try
            {
                Release(broken: true);
            }
            catch (Exception)
            {
                // The pool may be gone too when the process ends; a finalizer must not throw.
            }
        }

        public void EnterCall() => Interlocked.Increment(ref _calls);

        public void ExitCall()
        {
            if (Interlocked.Decrement(ref _calls) == 0 && _releaseWhenIdle)
            {
                Release(broken: true);
            }
        }

        public void ReleaseWhenIdle()
        {
            _releaseWhenIdle = true;
            if (Volatile.Read(ref _calls) == 0)
            {
                Release(broken: true);
            }
        }

        public void Release(bool broken)
        {
            if (Interlocked.Exchange(ref _released, 1) != 0)
            {
                return;
            }

#pragma warning disable CA1816 // Released by its proxy, the finalizer has nothing left to do.
            GC.SuppressFinalize(this);
#pragma warning restore CA1816
            if (broken && lease.IsActive)
            {
                lease.MarkBroken();
            }

            lease.Release();
        }
    }
}
