using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace ChannelPool.Hosting;

/// <summary>
/// Warms every registered pool as the host starts, applies configuration reloads to running pools, and drains every
/// pool as the host stops.
/// </summary>
/// <remarks>
/// Warm-up runs in <see cref="StartingAsync"/>, which the host calls before any hosted service's StartAsync, so a
/// pool that waits for ready channels is warm before Kestrel (or any other server) starts accepting work.
/// </remarks>
internal sealed partial class ChannelPoolHostedService : IHostedLifecycleService, IDisposable
{
    private readonly IServiceProvider _services;
    private readonly IReadOnlyList<ChannelPoolRegistration> _registrations;
    private readonly IOptionsMonitor<ChannelPoolOptions> _poolOptions;
    private readonly IOptionsMonitor<ChannelPoolStartupOptions> _startupOptions;
    private readonly ILogger _logger;
    private readonly List<IDisposable> _reloadSubscriptions = [];
    private IChannelPool[] _pools = [];

    public ChannelPoolHostedService(
        IServiceProvider services,
        IEnumerable<ChannelPoolRegistration> registrations,
        IOptionsMonitor<ChannelPoolOptions> poolOptions,
        IOptionsMonitor<ChannelPoolStartupOptions> startupOptions,
        ILoggerFactory? loggerFactory = null)
    {
        _services = services;
        _registrations = [.. registrations];
        _poolOptions = poolOptions;
        _startupOptions = startupOptions;
        _logger = loggerFactory?.CreateLogger("ChannelPool.Hosting") ?? NullLogger.Instance;
    }

    public async Task StartingAsync(CancellationToken cancellationToken)
    {
        _pools = [.. _registrations.Select(r => _services.GetRequiredKeyedService<IChannelPool>(r.Name))];
        foreach (var pool in _pools)
        {
            var name = pool.Name;
            var subscription = _poolOptions.OnChange((options, changed) =>
            {
                if (changed == name)
                {
                    pool.Reconfigure(options);
                }
            });
            if (subscription is not null)
            {
                _reloadSubscriptions.Add(subscription);
            }
        }

        await Task.WhenAll(_pools.Select(pool => WarmUpAsync(pool, cancellationToken))).ConfigureAwait(false);
    }

    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StartedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>
    /// Drains every pool at once. The host cancels <paramref name="cancellationToken"/> when its shutdown timeout runs
    /// out; each drain then aborts what is left instead of waiting, so stopping never hangs on a server that is gone.
    /// </summary>
    public async Task StopAsync(CancellationToken cancellationToken)
    {
        DisposeSubscriptions();
        await Task.WhenAll(_pools.Select(pool => pool.DrainAsync(cancellationToken))).ConfigureAwait(false);
    }

    public Task StoppedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public void Dispose() => DisposeSubscriptions();

    private async Task WarmUpAsync(IChannelPool pool, CancellationToken cancellationToken)
    {
        var startup = _startupOptions.Get(pool.Name);
        if (startup.WaitForReadyChannels > pool.PoolSize)
        {
            throw new OptionsValidationException(
                pool.Name,
                typeof(ChannelPoolStartupOptions),
                [$"Channel pool '{pool.Name}': Startup.WaitForReadyChannels must be at most PoolSize ({pool.PoolSize}); it was {startup.WaitForReadyChannels}."]);
        }

        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        if (startup.ReadyTimeout != Timeout.InfiniteTimeSpan)
        {
            timeout.CancelAfter(startup.ReadyTimeout);
        }

        try
        {
            await pool.WarmUpAsync(startup.WaitForReadyChannels, timeout.Token).ConfigureAwait(false);
            if (startup.WaitForReadyChannels == 0)
            {
                LogFillingInBackground(_logger, pool.Name, pool.PoolSize);
            }
            else
            {
                var snapshot = pool.GetSnapshot();
                LogWarmedUp(_logger, pool.Name, snapshot.Idle + snapshot.Leased, startup.WaitForReadyChannels, pool.PoolSize);
            }
        }
        catch (Exception ex) when (ex is OperationCanceledException or ChannelPoolUnavailableException && !cancellationToken.IsCancellationRequested)
        {
            throw new InvalidOperationException(
                $"Channel pool '{pool.Name}' did not have the {startup.WaitForReadyChannels} open channel(s) its start-up waits for " +
                $"within {startup.ReadyTimeout} ({pool.GetSnapshot()}). Fix the cause below, or set Startup.WaitForReadyChannels to 0 " +
                "to start without waiting.",
                ex is ChannelPoolUnavailableException ? ex : null);
        }
    }

    private void DisposeSubscriptions()
    {
        foreach (var subscription in _reloadSubscriptions)
        {
            subscription.Dispose();
        }

        _reloadSubscriptions.Clear();
    }

    [LoggerMessage(102, LogLevel.Information, "Channel pool '{PoolName}' is warm: {Open} channel(s) open, start-up waited for {Ready}; filling to {PoolSize} in the background.")]
    private static partial void LogWarmedUp(ILogger logger, string poolName, int open, int ready, int poolSize);

    // With the default WaitForReadyChannels of 0 nothing is open yet, so "is warm" would be false.
    [LoggerMessage(103, LogLevel.Information, "Channel pool '{PoolName}' is filling to {PoolSize} channel(s) in the background; start-up did not wait for any (Startup:WaitForReadyChannels is 0).")]
    private static partial void LogFillingInBackground(ILogger logger, string poolName, int poolSize);
}
