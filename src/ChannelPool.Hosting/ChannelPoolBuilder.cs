using ChannelPool;
using ChannelPool.Hosting;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Options;
using Polly.Registry;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Configures one pool registered with <c>AddChannelPool</c>. Every method returns the builder.</summary>
/// <typeparam name="TChannel">The pool's channel type.</typeparam>
public sealed class ChannelPoolBuilder<TChannel>
    where TChannel : class
{
    internal ChannelPoolBuilder(IServiceCollection services, string name)
    {
        Services = services;
        Name = name;
    }

    /// <summary>Gets the pool's name: its service key, options name and telemetry name.</summary>
    public string Name { get; }

    /// <summary>Gets the service collection the pool is registered in.</summary>
    public IServiceCollection Services { get; }

    /// <summary>
    /// Binds the pool's options from configuration, and its start-up options from the <c>Startup</c> subsection.
    /// Changes to the section while the application runs are applied to the running pool.
    /// </summary>
    /// <param name="sectionPath">The section; defaults to <c>ChannelPool:Pools:{Name}</c>.</param>
    /// <returns>This builder.</returns>
    public ChannelPoolBuilder<TChannel> BindConfiguration(string? sectionPath = null)
    {
        var path = sectionPath ?? $"ChannelPool:Pools:{Name}";

        // Options that follow others (RefillThreshold, CleanupInterval, IdleTimeout, LeaseMode) are null until set, and
        // the binder leaves a null the section does not name alone, so they keep following their defaults.
        Services.AddOptions<ChannelPoolOptions>(Name).BindConfiguration(path);
        Services.AddOptions<ChannelPoolStartupOptions>(Name).BindConfiguration($"{path}:Startup");
        return this;
    }

    /// <summary>Configures the pool's options in code. Runs after configuration binding registered before it.</summary>
    /// <param name="configure">Sets options.</param>
    /// <returns>This builder.</returns>
    public ChannelPoolBuilder<TChannel> Configure(Action<ChannelPoolOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(configure);
        Services.Configure(Name, configure);
        return this;
    }

    /// <summary>Configures how the host starts the pool, for example how many ready channels start-up waits for.</summary>
    /// <param name="configure">Sets start-up options.</param>
    /// <returns>This builder.</returns>
    public ChannelPoolBuilder<TChannel> ConfigureStartup(Action<ChannelPoolStartupOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(configure);
        Services.Configure(Name, configure);
        return this;
    }

    /// <summary>
    /// Runs opens through the pipeline registered under <paramref name="pipelineKey"/> with Polly's
    /// <c>services.AddResiliencePipeline(key, ...)</c>, instead of the one the pool builds from its options. The
    /// pipeline then reloads and reports telemetry as Polly's registry arranges. It should include a circuit breaker.
    /// </summary>
    /// <param name="pipelineKey">The key the pipeline is registered under.</param>
    /// <returns>This builder.</returns>
    /// <exception cref="ArgumentException"><paramref name="pipelineKey"/> is empty or white space.</exception>
    /// <remarks>A key with no pipeline behind it stops the pool's creation with an error naming the pool and the key.</remarks>
    public ChannelPoolBuilder<TChannel> UseOpenPipeline(string pipelineKey)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(pipelineKey);
        var name = Name;
        Services.AddOptions<ChannelPoolOptions>(Name).Configure<IServiceProvider>((options, services) =>
        {
            var provider = services.GetService<ResiliencePipelineProvider<string>>();
            options.OpenPipeline = provider is not null && provider.TryGetPipeline(pipelineKey, out var pipeline)
                ? pipeline
                : throw new InvalidOperationException(
                    $"Channel pool '{name}': no resilience pipeline is registered under the key '{pipelineKey}'. " +
                    $"Register one with services.AddResiliencePipeline(\"{pipelineKey}\", ...) from Polly.Extensions.");
        });
        return this;
    }

    /// <summary>Adds a health check for the pool (see <see cref="ChannelPoolHealthCheck"/>).</summary>
    /// <param name="checkName">The check's name; defaults to <c>channelpool:{Name}</c>.</param>
    /// <param name="failureStatus">Reported instead of Unhealthy; defaults to Unhealthy.</param>
    /// <param name="tags">Tags for filtering, for example <c>ready</c>.</param>
    /// <returns>This builder.</returns>
    public ChannelPoolBuilder<TChannel> AddHealthCheck(string? checkName = null, HealthStatus? failureStatus = null, IEnumerable<string>? tags = null)
    {
        var name = Name;
        Services.AddHealthChecks().Add(new HealthCheckRegistration(
            checkName ?? $"channelpool:{name}",
            services => new ChannelPoolHealthCheck(services.GetRequiredKeyedService<IChannelPool>(name)),
            failureStatus,
            tags));
        return this;
    }
}
