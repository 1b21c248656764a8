using System.ServiceModel;

namespace ChannelPool.ServiceModel;

/// <summary>
/// Opens, checks and closes real WCF client channels for a <see cref="DefaultChannelPool{TChannel}"/>. All channels come from
/// one <see cref="ChannelFactory{TChannel}"/>, because that is where a binding keeps its connections (HTTP bindings
/// share one HTTP client per factory).
/// </summary>
/// <typeparam name="TContract">The service contract.</typeparam>
/// <remarks>
/// <para>
/// <see cref="OpenAsync"/> really opens each channel, on the pool's background worker: for net.tcp with TLS that is the
/// TCP connect and the TLS handshake, for WS-SecureConversation the token negotiation. HTTP bindings open no connection
/// until the first call; their channels share the factory's connections.
/// </para>
/// <para>
/// The channels it hands out track their own calls: one that fails with a <see cref="CommunicationException"/> (other
/// than a <see cref="FaultException"/>, which is an application's answer) or a <see cref="TimeoutException"/> is never
/// usable again, whatever its <see cref="ICommunicationObject.State"/> says.
/// </para>
/// <para>
/// A WCF client does not notice while idle that a service dropped its session: the channel stays
/// <see cref="CommunicationState.Opened"/> until a call fails. So <see cref="IsUsable"/> also polls the connection of a
/// session channel that has been idle for 500 ms or more, without sending anything, and a dead one is never leased.
/// </para>
/// <para>
/// When the pool is cleared (<see cref="Renew"/>), channels opened from then on come from a new channel factory, so on
/// HTTP bindings they run on new connections; the old factory, and its connections, close when its last channel has.
/// </para>
/// </remarks>
public sealed class ServiceModelChannelFactory<TContract> : IPooledChannelFactory<TContract>, IAsyncDisposable
    where TContract : class
{
    private readonly Func<ChannelFactory<TContract>>? _createFactory;
    private readonly TimeProvider _timeProvider;
    private readonly SessionProbe _probe = new();
    private volatile FactoryGeneration _current;

    /// <summary>Creates the adapter over <paramref name="channelFactory"/>, which it owns from now on.</summary>
    /// <param name="channelFactory">The factory the channels come from. The adapter opens it and closes it on dispose.</param>
    /// <param name="timeProvider">Tells how long a channel has been idle; use the pool's. Defaults to <see cref="TimeProvider.System"/>.</param>
    /// <exception cref="ArgumentNullException"><paramref name="channelFactory"/> is null.</exception>
    /// <remarks>An adapter made this way cannot make a new factory, so <see cref="Renew"/> keeps this one.</remarks>
    public ServiceModelChannelFactory(ChannelFactory<TContract> channelFactory, TimeProvider? timeProvider = null)
    {
        ArgumentNullException.ThrowIfNull(channelFactory);
        _timeProvider = timeProvider ?? TimeProvider.System;
        _current = new FactoryGeneration(channelFactory);
    }

    /// <summary>Creates the adapter over the factories <paramref name="createFactory"/> makes: one now, and one at each renewal.</summary>
    internal ServiceModelChannelFactory(Func<ChannelFactory<TContract>> createFactory, TimeProvider? timeProvider)
        : this(createFactory(), timeProvider)
    {
        _createFactory = createFactory;
    }

    /// <summary>Gets the factory new channels come from.</summary>
    public ChannelFactory<TContract> ChannelFactory => _current.Factory;

    /// <inheritdoc />
    public async ValueTask<TContract> OpenAsync(CancellationToken cancellationToken)
    {
        var startedAt = System.Diagnostics.Stopwatch.GetTimestamp();
        var generation = _current;
        generation.AddChannel();
        try
        {
            // CreateChannel on an unopened factory opens it synchronously; open it once, asynchronously, first.
            await generation.Opened.Value.WaitAsync(cancellationToken).ConfigureAwait(false);

            var channel = generation.Factory.CreateChannel();
            var communication = (ICommunicationObject)channel;
            try
            {
                using (cancellationToken.UnsafeRegister(static state => ((ICommunicationObject)state!).Abort(), communication))
                {
                    await Task.Factory.FromAsync(communication.BeginOpen, communication.EndOpen, state: null).ConfigureAwait(false);
                }
            }
            catch (Exception ex) when (ex is CommunicationException or TimeoutException or ObjectDisposedException)
            {
                communication.Abort();
                cancellationToken.ThrowIfCancellationRequested();
                throw;
            }

            return FailureTrackingChannel<TContract>.Wrap(channel, _timeProvider, _probe, generation, startedAt);
        }
        catch
        {
            generation.RemoveChannel();
            throw;
        }
    }

    /// <inheritdoc />
    public bool IsUsable(TContract channel) => FailureTrackingChannel<TContract>.Of(channel).IsUsable;

    /// <inheritdoc />
    public async ValueTask CloseAsync(TContract channel, CancellationToken cancellationToken)
    {
        var tracked = FailureTrackingChannel<TContract>.Of(channel);
        var communication = tracked.Communication;
        try
        {
            if (communication.State != CommunicationState.Opened)
            {
                // Closing a faulted channel throws; there is no session left to end politely.
                communication.Abort();
                return;
            }

            using (cancellationToken.UnsafeRegister(static state => ((ICommunicationObject)state!).Abort(), communication))
            {
                await Task.Factory.FromAsync(communication.BeginClose, communication.EndClose, state: null).ConfigureAwait(false);
            }
        }
        catch (Exception ex) when (ex is CommunicationException or TimeoutException or ObjectDisposedException)
        {
            communication.Abort();
        }
        finally
        {
            ((FactoryGeneration)tracked.Owner!).RemoveChannel();
        }
    }

    /// <inheritdoc />
    public void Abort(TContract channel)
    {
        var tracked = FailureTrackingChannel<TContract>.Of(channel);
        tracked.Communication.Abort();
        ((FactoryGeneration)tracked.Owner!).RemoveChannel();
    }

    /// <summary>Gets the error of the call that broke <paramref name="channel"/>, if a call did.</summary>
    /// <param name="channel">A channel this factory opened.</param>
    /// <returns>The call's error, or <see langword="null"/>.</returns>
    public Exception? GetFailure(TContract channel) => FailureTrackingChannel<TContract>.Of(channel).Failure;

    /// <summary>
    /// Starts a new channel factory for the channels opened from now on, so they share no connection with those before
    /// (an HTTP binding keeps its connections in its factory). The old factory closes when its last channel has.
    /// </summary>
    public void Renew()
    {
        if (_createFactory is null)
        {
            return;
        }

        var old = Interlocked.Exchange(ref _current, new FactoryGeneration(_createFactory()));
        old.Retire();
    }

    /// <summary>Closes the channel factory, aborting it if the close fails.</summary>
    /// <returns>A task that completes when the factory is closed.</returns>
    public ValueTask DisposeAsync() => new(CloseFactoryAsync(_current.Factory));

    private static async Task CloseFactoryAsync(ChannelFactory<TContract> factory)
    {
        if (factory.State != CommunicationState.Opened)
        {
            factory.Abort();
            return;
        }

        try
        {
            await Task.Factory.FromAsync(factory.BeginClose, factory.EndClose, state: null).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is CommunicationException or TimeoutException or ObjectDisposedException)
        {
            factory.Abort();
        }
    }

    /// <summary>One channel factory and the channels (and opens) that came from it, so a retired one closes after its last.</summary>
    private sealed class FactoryGeneration(ChannelFactory<TContract> factory)
    {
        // Counts open channels and opens under way; -1 once closing, so it closes once.
        private int _channels;
        private volatile bool _retired;

        public ChannelFactory<TContract> Factory { get; } = factory;

        public Lazy<Task> Opened { get; } = new(() => Task.Factory.FromAsync(factory.BeginOpen, factory.EndOpen, state: null));

        public void AddChannel() => Interlocked.Increment(ref _channels);

        public void RemoveChannel()
        {
            if (Interlocked.Decrement(ref _channels) == 0 && _retired)
            {
                CloseIfUnused();
            }
        }

        public void Retire()
        {
            _retired = true;
            CloseIfUnused();
        }

        private void CloseIfUnused()
        {
            if (Interlocked.CompareExchange(ref _channels, -1, 0) == 0)
            {
                _ = CloseFactoryAsync(Factory);
            }
        }
    }
}
