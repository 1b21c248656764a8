using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace ChannelPool.Hosting.Tests;

/// <summary>
/// A real generic host with nothing added by default: configuration is an in-memory source the test can change and
/// reload, every log event of every level goes to a FakeLogCollector, and the pool's clock is a fake unless a test asks for real time.
/// </summary>
internal sealed class TestHost : IAsyncDisposable
{
    private readonly ReloadableSource _config;

    private TestHost(IHost host, ReloadableSource config)
    {
        Host = host;
        _config = config;
    }

    public IHost Host { get; }

    public IServiceProvider Services => Host.Services;

    public FakeLogCollector Log => Services.GetFakeLogCollector();

    public static TestHost Create(
        Action<IServiceCollection> configureServices,
        IDictionary<string, string?>? configuration = null,
        TimeProvider? timeProvider = null,
        TimeSpan? shutdownTimeout = null)
    {
        var builder = Microsoft.Extensions.Hosting.Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings());
        var source = new ReloadableSource(configuration ?? new Dictionary<string, string?>());
        ((IConfigurationBuilder)builder.Configuration).Add(source);
        builder.Logging.SetMinimumLevel(LogLevel.Trace).AddFakeLogging();
        if (timeProvider is not null)
        {
            builder.Services.AddSingleton(timeProvider);
        }

        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = shutdownTimeout ?? TimeSpan.FromSeconds(10));
        configureServices(builder.Services);
        return new TestHost(builder.Build(), source);
    }

    /// <summary>Changes a configuration value and raises the reload, as a changed appsettings.json would.</summary>
    public void Reconfigure(string key, string? value) => _config.Provider.SetAndReload(key, value);

    public async ValueTask DisposeAsync()
    {
        if (Host is IAsyncDisposable asyncDisposable)
        {
            await asyncDisposable.DisposeAsync();
        }
        else
        {
            Host.Dispose();
        }
    }

    /// <summary>A configuration source whose values a test can change, raising the same reload a changed file does.</summary>
    private sealed class ReloadableSource(IDictionary<string, string?> initial) : IConfigurationSource
    {
        public ReloadableProvider Provider { get; } = new(initial);

        public IConfigurationProvider Build(IConfigurationBuilder builder) => Provider;
    }

    private sealed class ReloadableProvider : ConfigurationProvider
    {
        public ReloadableProvider(IDictionary<string, string?> initial)
        {
            foreach (var (key, value) in initial)
            {
                Data[key] = value;
            }
        }

        public void SetAndReload(string key, string? value)
        {
            Data[key] = value;
            OnReload();
        }
    }
}
