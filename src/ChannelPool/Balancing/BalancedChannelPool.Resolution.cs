using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;

namespace ChannelPool;

public sealed partial class BalancedChannelPool<TChannel>
{
    private readonly ITimer? _resolveTimer;
    private int _resolving;

    /// <summary>
    /// Resolves the host names again now, as the resolve timer does: new addresses join and warm up in the background,
    /// vanished ones drain.
    /// </summary>
    /// <returns>A task that completes when the address list follows the new answers.</returns>
    public async Task ResolveAsync()
    {
        if (!_balancing.ResolveHostNames || Interlocked.Exchange(ref _resolving, 1) == 1)
        {
            return;
        }

        try
        {
            var resolved = new List<PoolAddress>();
            foreach (var uri in Configured)
            {
                resolved.AddRange(await ResolveOneAsync(uri, keepOnFailure: true).ConfigureAwait(false));
            }

            Follow(resolved);
        }
        finally
        {
            Volatile.Write(ref _resolving, 0);
        }
    }

    private List<PoolAddress> ResolveInitial(List<Uri> configured)
    {
        // A constructor cannot await; the pool's first addresses are worth one blocking lookup, as WCF's own connect does.
        var resolved = new List<PoolAddress>();
        foreach (var uri in configured)
        {
            resolved.AddRange(ResolveOneAsync(uri, keepOnFailure: false).AsTask().GetAwaiter().GetResult());
        }

        return resolved.Distinct().ToList();
    }

    /// <summary>
    /// One configured address's answers: one address per IP for a host name, the address itself for an IP literal.
    /// A failed lookup keeps what the pool has for that name (or, at first, the name as given).
    /// </summary>
    private async ValueTask<IEnumerable<PoolAddress>> ResolveOneAsync(Uri configured, bool keepOnFailure)
    {
        if (configured.HostNameType != UriHostNameType.Dns)
        {
            return [new PoolAddress(configured)];
        }

        try
        {
            var resolver = _balancing.Resolver ?? Dns.GetHostAddressesAsync;
            var ips = await resolver(configured.DnsSafeHost, CancellationToken.None).ConfigureAwait(false);
            var usable = ips.Where(ip => ip.AddressFamily is AddressFamily.InterNetwork or AddressFamily.InterNetworkV6).Distinct().ToArray();
            if (usable.Length > 0)
            {
                return usable.Select(ip => new PoolAddress(new UriBuilder(configured) { Host = ip.ToString() }.Uri, configured.DnsSafeHost));
            }

            LogResolveFailed(_logger, Name, configured.DnsSafeHost, null);
        }
        catch (Exception ex) when (ex is SocketException or ArgumentException or TimeoutException)
        {
            LogResolveFailed(_logger, Name, configured.DnsSafeHost, ex);
        }

        if (keepOnFailure)
        {
            var kept = _endpoints.Where(e => e.State != EndpointState.Draining
                && string.Equals(e.Address.HostName ?? e.Address.Uri.DnsSafeHost, configured.DnsSafeHost, StringComparison.OrdinalIgnoreCase));
            return kept.Select(e => e.Address).ToArray();
        }

        return [new PoolAddress(configured)];
    }

    /// <summary>Makes the address list follow <paramref name="resolved"/>: new addresses join, vanished ones drain.</summary>
    private void Follow(List<PoolAddress> resolved)
    {
        var leaving = new List<PoolEndpoint<TChannel>>();
        var joined = new List<PoolAddress>();
        using (_lock.EnterScope())
        {
            if (_disposed || resolved.Count == 0)
            {
                return;
            }

            foreach (var endpoint in _endpoints)
            {
                if (endpoint.State != EndpointState.Draining && !resolved.Contains(endpoint.Address))
                {
                    endpoint.State = EndpointState.Draining;
                    leaving.Add(endpoint);
                }
            }

            var live = resolved.Distinct().ToList();
            foreach (var address in live)
            {
                if (!_endpoints.Any(e => e.State != EndpointState.Draining && e.Address.Equals(address)))
                {
                    Join_NoLock(address, live.Count);
                    joined.Add(address);
                }
            }

            if (leaving.Count == 0 && joined.Count == 0)
            {
                return;
            }

            Publish_NoLock();
            Reshare_NoLock();
        }

        foreach (var address in joined)
        {
            LogJoined(_logger, Name, address.ToString());
        }

        foreach (var endpoint in leaving)
        {
            LogLeaving(_logger, Name, endpoint.Pool.Name);
            _ = LeaveAsync(endpoint);
        }
    }

    private async Task LeaveAsync(PoolEndpoint<TChannel> endpoint)
    {
        // Its callers already waiting lease elsewhere; its channels close as their leases come back.
        endpoint.Pool.RefuseWaiters("its address vanished from resolution.");
        try
        {
            await endpoint.Pool.DrainAsync().ConfigureAwait(false);
        }
        finally
        {
            endpoint.Pool.Dispose();
            using (_lock.EnterScope())
            {
                _endpoints = _endpoints.Where(e => e != endpoint).ToArray();
            }
        }
    }

    /// <summary>Every address is failing: the service may have moved, so resolve again now rather than at the next tick.</summary>
    private void NoteAllFailing_NoLock()
    {
        if (_balancing.ResolveHostNames)
        {
            _ = Task.Run(ResolveAsync);
        }
    }

    [LoggerMessage(406, LogLevel.Warning, "Channel pool '{PoolName}' could not resolve '{HostName}'; it keeps the addresses it has.")]
    private static partial void LogResolveFailed(ILogger logger, string poolName, string hostName, Exception? error);

    [LoggerMessage(407, LogLevel.Information, "Channel pool '{PoolName}' adds '{Address}', which resolution now returns.")]
    private static partial void LogJoined(ILogger logger, string poolName, string address);

    [LoggerMessage(408, LogLevel.Information, "Channel pool '{PoolName}' drains '{Address}', which resolution no longer returns.")]
    private static partial void LogLeaving(ILogger logger, string poolName, string address);
}
