using ChannelPool;

namespace ChannelPool.PollingDuplex.Client;

/// <summary>
/// Lets a <see cref="DefaultChannelPool{TChannel}"/> pre-open polling duplex sessions on its background worker, so a caller
/// leases a session that is already open and polling.
/// </summary>
public sealed class PollingDuplexChannelFactory : IPooledChannelFactory<DuplexClientSession>
{
    private readonly PollingDuplexClient _client;

    /// <summary>Creates a factory that opens sessions through <paramref name="client"/>.</summary>
    /// <param name="client">The client of the endpoint.</param>
    public PollingDuplexChannelFactory(PollingDuplexClient client)
    {
        ArgumentNullException.ThrowIfNull(client);
        _client = client;
    }

    /// <inheritdoc />
    public async ValueTask<DuplexClientSession> OpenAsync(CancellationToken cancellationToken) =>
        await _client.OpenSessionAsync(cancellationToken).ConfigureAwait(false);

    /// <inheritdoc />
    public bool IsUsable(DuplexClientSession channel)
    {
        ArgumentNullException.ThrowIfNull(channel);
        return channel.State == DuplexClientSessionState.Open;
    }

    /// <inheritdoc />
    public ValueTask CloseAsync(DuplexClientSession channel, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(channel);
        return new ValueTask(channel.CloseAsync(cancellationToken));
    }

    /// <inheritdoc />
    public void Abort(DuplexClientSession channel)
    {
        ArgumentNullException.ThrowIfNull(channel);
        channel.Abort();
    }
}
