using Microsoft.Extensions.Hosting;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>
/// Starts the node's Redis endpoints with the host, before it takes requests: each waits for its wake channel and joins
/// the endpoint's nodes, and a node whose options differ from a live node's fails to start, saying which. While Redis is
/// away the host starts anyway (requests get 503 until it is back), and the options are compared once it answers.
/// </summary>
internal sealed class RedisPollingDuplexStartup(RedisDuplexConnection connection) : IHostedService
{
    public async Task StartAsync(CancellationToken cancellationToken)
    {
        foreach (var store in connection.Stores)
        {
            try
            {
                await store.Subscribed.WaitAsync(cancellationToken);
                if (await store.AgreeAsync() is { } disagreement)
                {
                    throw new InvalidOperationException(disagreement);
                }
            }
            catch (Exception ex) when (ex is Stores.DuplexStoreUnavailableException or StackExchange.Redis.RedisException or StackExchange.Redis.RedisTimeoutException)
            {
                store.NoteAgreementDeferred(ex);
            }
        }
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        foreach (var store in connection.Stores)
        {
            // A stop with no time left to drain leaves the node's entry to lapse on its own.
            await store.LeaveNodesAsync().WaitAsync(cancellationToken).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        }
    }
}
