using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace ChannelPool.Hosting.Tests;

/// <summary>
/// A real generic host with nothing added by default: configuration is the in-memory provider, which a test can change and
/// reload, every log event of every level goes to a FakeLogCollector, and the pool's clock is a fake unless a test asks for real time.
/// </summary>
internal sealed class TestHost : IAsyncDisposable
{
    private TestHost(IHost host) => Host = host;

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
        builder.Configuration.AddInMemoryCollection(configuration ?? new Dictionary<string, string?>());
        builder.Logging.SetMinimumLevel(LogLevel.Trace).AddFakeLogging();
        if (timeProvider is not null)
        {
            builder.Services.AddSingleton(timeProvider);
        }

        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = shutdownTimeout ?? TimeSpan.FromSeconds(10));
        configureServices(builder.Services);
        return new TestHost(builder.Build());
    }

    /// <summary>Changes a configuration value and raises the reload, as a changed appsettings.json would.</summary>
    public void Reconfigure(string key, string? value)
    {
        var configuration = (IConfigurationRoot)Services.GetRequiredService<IConfiguration>();
        configuration[key] = value;
        configuration.Reload();
    }

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
}
