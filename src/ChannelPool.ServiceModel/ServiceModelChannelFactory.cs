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
/// </remarks>
public sealed class ServiceModelChannelFactory<TContract> : IPooledChannelFactory<TContract>, IAsyncDisposable
    where TContract : class
{
    private readonly Lazy<Task> _factoryOpened;
    private readonly TimeProvider _timeProvider;
    private readonly SessionProbe _probe = new();

    /// <summary>Creates the adapter over <paramref name="channelFactory"/>, which it owns from now on.</summary>
    /// <param name="channelFactory">The factory the channels come from. The adapter opens it and closes it on dispose.</param>
    /// <param name="timeProvider">Tells how long a channel has been idle; use the pool's. Defaults to <see cref="TimeProvider.System"/>.</param>
    /// <exception cref="ArgumentNullException"><paramref name="channelFactory"/> is null.</exception>
    public ServiceModelChannelFactory(ChannelFactory<TContract> channelFactory, TimeProvider? timeProvider = null)
    {
        ArgumentNullException.ThrowIfNull(channelFactory);
        ChannelFactory = channelFactory;
        _timeProvider = timeProvider ?? TimeProvider.System;
        _factoryOpened = new Lazy<Task>(() => Task.Factory.FromAsync(channelFactory.BeginOpen, channelFactory.EndOpen, state: null));
    }

    /// <summary>Gets the factory the channels come from.</summary>
    public ChannelFactory<TContract> ChannelFactory { get; }

    /// <inheritdoc />
    public async ValueTask<TContract> OpenAsync(CancellationToken cancellationToken)
    {
        // CreateChannel on an unopened factory opens it synchronously; open it once, asynchronously, first.
        await _factoryOpened.Value.WaitAsync(cancellationToken).ConfigureAwait(false);

        var channel = ChannelFactory.CreateChannel();
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

        return FailureTrackingChannel<TContract>.Wrap(channel, _timeProvider, _probe);
    }

    /// <inheritdoc />
    public bool IsUsable(TContract channel) => FailureTrackingChannel<TContract>.Of(channel).IsUsable;

    /// <inheritdoc />
    public async ValueTask CloseAsync(TContract channel, CancellationToken cancellationToken)
    {
        var communication = FailureTrackingChannel<TContract>.Of(channel).Communication;
        if (communication.State != CommunicationState.Opened)
        {
            // Closing a faulted channel throws; there is no session left to end politely.
            communication.Abort();
            return;
        }

        try
        {
            using (cancellationToken.UnsafeRegister(static state => ((ICommunicationObject)state!).Abort(), communication))
            {
                await Task.Factory.FromAsync(communication.BeginClose, communication.EndClose, state: null).ConfigureAwait(false);
            }
        }
        catch (Exception ex) when (ex is CommunicationException or TimeoutException or ObjectDisposedException)
        {
            communication.Abort();
        }
    }

    /// <inheritdoc />
    public void Abort(TContract channel) => FailureTrackingChannel<TContract>.Of(channel).Communication.Abort();

    /// <summary>Gets the error of the call that broke <paramref name="channel"/>, if a call did.</summary>
    /// <param name="channel">A channel this factory opened.</param>
    /// <returns>The call's error, or <see langword="null"/>.</returns>
    public Exception? GetFailure(TContract channel) => FailureTrackingChannel<TContract>.Of(channel).Failure;

    /// <summary>Closes the channel factory, aborting it if the close fails.</summary>
    /// <returns>A task that completes when the factory is closed.</returns>
    public async ValueTask DisposeAsync()
    {
        if (ChannelFactory.State != CommunicationState.Opened)
        {
            ChannelFactory.Abort();
            return;
        }

        try
        {
            await Task.Factory.FromAsync(ChannelFactory.BeginClose, ChannelFactory.EndClose, state: null).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is CommunicationException or TimeoutException or ObjectDisposedException)
        {
            ChannelFactory.Abort();
        }
    }
}
