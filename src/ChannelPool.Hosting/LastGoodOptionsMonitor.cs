using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Primitives;

namespace ChannelPool.Hosting;

/// <summary>
/// The <see cref="IOptionsMonitor{TOptions}"/> for <see cref="ChannelPoolOptions"/>: like the standard one, except
/// that a reload that fails validation is logged and rejected, and the last valid options stay in force.
/// </summary>
/// <remarks>
/// The standard monitor drops its cached value before it builds the new one, so an invalid reload makes every later
/// read throw, and the exception surfaces on the configuration reload thread, where nothing can catch it (see
/// dotnet/runtime#44381). For a pool serving traffic, a typo in appsettings.json must not do that. Validation at start
/// is unchanged: the first read of each name builds and validates as usual, and throws.
/// </remarks>
internal sealed partial class LastGoodOptionsMonitor : IOptionsMonitor<ChannelPoolOptions>, IDisposable
{
    private readonly IOptionsFactory<ChannelPoolOptions> _factory;
    private readonly ILogger _logger;
    private readonly ConcurrentDictionary<string, ChannelPoolOptions> _current = new(StringComparer.Ordinal);
    private readonly List<IDisposable> _subscriptions = [];
    private readonly Lock _listenersLock = new();

    // Copy-on-write: a reload reads the array without the lock.
    private Action<ChannelPoolOptions, string?>[] _listeners = [];

    public LastGoodOptionsMonitor(
        IOptionsFactory<ChannelPoolOptions> factory,
        IEnumerable<IOptionsChangeTokenSource<ChannelPoolOptions>> sources,
        ILoggerFactory? loggerFactory = null)
    {
        _factory = factory;
        _logger = loggerFactory?.CreateLogger("ChannelPool.Hosting") ?? NullLogger.Instance;
        foreach (var source in sources)
        {
            _subscriptions.Add(ChangeToken.OnChange(source.GetChangeToken, Reload, source.Name));
        }
    }

    public ChannelPoolOptions CurrentValue => Get(Options.DefaultName);

    public ChannelPoolOptions Get(string? name) =>
        _current.GetOrAdd(name ?? Options.DefaultName, static (key, factory) => factory.Create(key), _factory);

    public IDisposable OnChange(Action<ChannelPoolOptions, string?> listener)
    {
        using (_listenersLock.EnterScope())
        {
            _listeners = [.. _listeners, listener];
        }

        return new Subscription(this, listener);
    }

    public void Dispose()
    {
        foreach (var subscription in _subscriptions)
        {
            subscription.Dispose();
        }
    }

    private void Reload(string? sourceName)
    {
        // A source with no name speaks for every name; names never read yet are built fresh when first read.
        var names = sourceName is null ? [.. _current.Keys] : new[] { sourceName };
        foreach (var name in names)
        {
            if (!_current.ContainsKey(name))
            {
                continue;
            }

            ChannelPoolOptions fresh;
            try
            {
                fresh = _factory.Create(name);
            }
            catch (Exception ex) when (ex is OptionsValidationException or InvalidOperationException or FormatException or ArgumentException)
            {
                LogReloadRejected(_logger, name, ex.Message, ex);
                continue;
            }

            _current[name] = fresh;
            foreach (var listener in Volatile.Read(ref _listeners))
            {
                try
                {
                    listener(fresh, name);
                }
                catch (Exception ex) when (ex is OptionsValidationException or ObjectDisposedException)
                {
                    LogReloadRejected(_logger, name, ex.Message, ex);
                }
            }
        }
    }

    [LoggerMessage(101, LogLevel.Error, "Reloaded settings of channel pool '{PoolName}' were rejected, and the pool keeps its current settings: {Reason}")]
    private static partial void LogReloadRejected(ILogger logger, string poolName, string reason, Exception error);

    private sealed class Subscription(LastGoodOptionsMonitor monitor, Action<ChannelPoolOptions, string?> listener) : IDisposable
    {
        public void Dispose()
        {
            using (monitor._listenersLock.EnterScope())
            {
                monitor._listeners = [.. monitor._listeners.Where(l => l != listener)];
            }
        }
    }
}
