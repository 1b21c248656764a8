using System.ComponentModel.DataAnnotations;
using Polly;

namespace ChannelPool;

/// <summary>
/// Settings for one <see cref="DefaultChannelPool{TChannel}"/>. Defaults follow the original 2007 WCF channel pool where it
/// had one; <c>docs/configuration.md</c> gives the reason for each.
/// </summary>
/// <remarks>Validated when a pool is created: a broken rule throws an <see cref="Microsoft.Extensions.Options.OptionsValidationException"/> that names every rule broken.</remarks>
public sealed class ChannelPoolOptions
{
    /// <summary>The default <see cref="PoolSize"/>: 50 pre-opened channels, as in the original.</summary>
    public const int DefaultPoolSize = 50;

    /// <summary>
    /// The default <see cref="MaxChannels"/>: 126, which keeps a client under the common server limit of 128 pending
    /// secure sessions.
    /// </summary>
    public const int DefaultMaxChannels = 126;

    /// <summary>
    /// Gets or sets the pool's name, used in exceptions, logs and the <c>channelpool.pool.name</c> telemetry tag.
    /// When <see langword="null"/>, the pool uses the channel type's name.
    /// </summary>
    public string? Name { get; set; }

    /// <summary>
    /// Gets or sets how many idle channels the pool pre-opens and refills back up to. Defaults to
    /// <see cref="DefaultPoolSize"/>. With an adaptive <see cref="IdleTarget"/>, where the target starts and what a
    /// warm-up opens.
    /// </summary>
    public int PoolSize { get; set; } = DefaultPoolSize;

    /// <summary>
    /// Gets or sets the hard cap on opening, idle and leased channels together. Defaults to
    /// <see cref="DefaultMaxChannels"/>.
    /// </summary>
    [Range(1, int.MaxValue)]
    public int MaxChannels { get; set; } = DefaultMaxChannels;

    /// <summary>
    /// Gets or sets the idle count at or below which a refill starts. <see langword="null"/>, the default, means half
    /// of <see cref="PoolSize"/>, as in the original: the pool works it out when it is created or reconfigured, so it
    /// follows whatever <see cref="PoolSize"/> is then. With an adaptive <see cref="IdleTarget"/> the threshold follows
    /// the target: one below it when this is <see langword="null"/>, or this value's share of <see cref="PoolSize"/>
    /// applied to the target. <see cref="IChannelPool.RefillThreshold"/> reports the value in force.
    /// </summary>
    public int? RefillThreshold { get; set; }

    /// <summary>
    /// Gets or sets how long a channel may live after it opened: no channel outlives it. The pool spreads the channels'
    /// deadlines over this span (channels opened together end one at a time, not together) and opens each one's
    /// replacement in the background shortly before its deadline, so a caller does not wait for an open when channels
    /// age out. Defaults to 90 seconds.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:01", "1.00:00:00")]
    public TimeSpan ChannelLifetime { get; set; } = TimeSpan.FromSeconds(90);

    /// <summary>
    /// Gets or sets the largest fraction of <see cref="ChannelLifetime"/> by which a channel's deadline is brought
    /// forward at random, on top of the pool's own spreading of deadlines, and never by more than the spacing between
    /// two channels' deadlines (the lifetime over the pool size), so jitter cannot bunch them again. Defaults to 0.1.
    /// </summary>
    [Range(0.0, 0.5)]
    public double LifetimeJitter { get; set; } = 0.1;

    /// <summary>
    /// Gets or sets how often the cleanup timer closes expired and unusable idle channels. <see langword="null"/>, the
    /// default, follows <see cref="ChannelLifetime"/>: half of it less two seconds (43 s for 90 s, as in the original),
    /// but never less than a quarter of it, nor longer than an <see cref="IdleTimeout"/> that is set, worked out when the
    /// pool is created or reconfigured.
    /// </summary>
    public TimeSpan? CleanupInterval { get; set; }

    /// <summary>
    /// Gets or sets how long a channel may sit idle before the cleanup timer closes it, while more channels idle than
    /// the pool keeps ready (its idle target: <see cref="PoolSize"/> when fixed, what an adaptive
    /// <see cref="IdleTarget"/> decided when adaptive): after a burst, the channels it opened close again instead of
    /// living to the end of their <see cref="ChannelLifetime"/>. <see langword="null"/>, the default, means half of
    /// <see cref="ChannelLifetime"/> (45 s for 90 s), worked out when the pool is created or reconfigured;
    /// <see cref="Timeout.InfiniteTimeSpan"/> turns it off.
    /// </summary>
    /// <remarks>
    /// The timer checks at every <see cref="CleanupInterval"/>, so a channel closes between this long and this long
    /// plus one cleanup interval after its last release. A <see cref="CleanupInterval"/> left to its default is never
    /// longer than this. Channels idle longest close first; the most recently used stay, as the idle order wants.
    /// </remarks>
    public TimeSpan? IdleTimeout { get; set; }

    /// <summary>
    /// Gets or sets what release does with a channel. <see langword="null"/>, the default, means
    /// <see cref="ChannelPool.LeaseMode.Reuse"/>; the WCF adapter (ChannelPool.ServiceModel) makes it
    /// <see cref="ChannelPool.LeaseMode.SingleUse"/> for contracts that require sessions. A value set here, in code or
    /// by configuration, wins over both. <see cref="IChannelPool.LeaseMode"/> reports the mode in force.
    /// </summary>
    public LeaseMode? LeaseMode { get; set; }

    /// <summary>
    /// Gets or sets which idle channel a lease takes. Defaults to <see cref="ChannelPool.IdleOrder.MostRecentlyUsed"/>,
    /// which keeps a light load on a few warm connections and measured faster than rotating through every idle channel
    /// on real net.tcp proxies (docs/performance.md). Idle channels still end at their lifetime, and the WCF adapter
    /// probes a channel idle for 500 ms or more before lending it, so a channel the service dropped meanwhile is never
    /// handed out.
    /// </summary>
    public IdleOrder IdleOrder { get; set; } = IdleOrder.MostRecentlyUsed;

    /// <summary>
    /// Gets or sets how many leases may hold one channel at the same time. <see langword="null"/>, the default, leaves it
    /// to the channels: 1 in the core pool, where a lease has its channel to itself and a channel that fails fails one
    /// caller; the WCF adapter (ChannelPool.ServiceModel) makes it 16 on bindings whose channel is a connection with a
    /// session (buffered net.tcp, named pipes), unless the contract requires sessions, and 1 elsewhere. Above 1, a
    /// lease first joins a leased channel with room (as <see cref="LeaseSharing"/> allows), and only takes an idle
    /// channel when none has room, as an HTTP/2 connection carries several requests at once. A value set here, in code
    /// or by configuration, wins. A reload that raises it reaches the channels opened after it; the others keep the
    /// slots they opened with.
    /// </summary>
    /// <remarks>
    /// Only for channels that carry concurrent calls: a WCF channel does. A WCF service with the default
    /// <c>ConcurrencyMode.Single</c> and per-session instances serves one session's calls one at a time, and then
    /// callers on a shared channel queue behind each other; adaptive sharing (the default <see cref="LeaseSharing"/>)
    /// sees that and gives each lease its own channel. A channel that breaks fails every lease on it. Requires
    /// <see cref="ChannelPool.LeaseMode.Reuse"/>; at most 64.
    /// </remarks>
    [Range(1, 64)]
    public int? MaxLeasesPerChannel { get; set; }

    /// <summary>
    /// Gets or sets whether a lease joins a channel other leases hold, when <see cref="MaxLeasesPerChannel"/> is above 1:
    /// <see cref="ChannelPool.LeaseSharing.Adaptive"/> (the default), only while leases that share channels end at least
    /// 1 / 1.5 as fast as leases with a channel each, and do not stall; or <see cref="ChannelPool.LeaseSharing.Always"/>.
    /// </summary>
    /// <remarks>
    /// Adaptive suits a service whose concurrency is not known, or changes: a service that serves a session's calls
    /// concurrently, or serves them one at a time but fast, gets a few shared connections, as a singleton proxy's callers
    /// do; a slow service that serves them one at a time gets a channel per lease. It times every lease that may share
    /// (two precise clock reads) and releases it through the shared path. <see cref="ChannelPool.LeaseSharing.Always"/>
    /// saves that, for a service known to serve a session's calls concurrently. With <see cref="MaxLeasesPerChannel"/>
    /// at 1 neither applies.
    /// </remarks>
    public LeaseSharing LeaseSharing { get; set; } = LeaseSharing.Adaptive;

    /// <summary>
    /// Gets or sets how long a caller waits for a channel before <see cref="ChannelPoolTimeoutException"/>.
    /// <see cref="Timeout.InfiniteTimeSpan"/> waits without limit. Defaults to 30 seconds.
    /// </summary>
    public TimeSpan AcquireTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Gets or sets how long a lease may be held before the pool logs it as a probable leak, with the stack of the code
    /// that acquired it, and counts it on <c>channelpool.channel.leaks</c>. <see langword="null"/>, the default, turns
    /// detection off in the core pool: the acquiring stack is then never captured, and leasing costs nothing extra.
    /// <see cref="Timeout.InfiniteTimeSpan"/> (<c>"-00:00:00.001"</c> in configuration) turns it off where an adapter
    /// would otherwise turn it on: the WCF adapter does for contracts that require sessions, whose proxies hold a channel.
    /// </summary>
    /// <remarks>
    /// A leaked lease is logged once, when found, and once more if it comes back. Found within a quarter of the
    /// threshold (at most 10 s) after it passes it. With detection on, every lease captures its caller's stack, which
    /// costs about 13 µs and 6 KB per lease (docs/performance.md): set it where exhaustion needs explaining, not
    /// everywhere by habit.
    /// </remarks>
    public TimeSpan? LeakDetectionThreshold { get; set; }

    /// <summary>
    /// Gets or sets how long the channel factory serves new channels before the pool renews it
    /// (<see cref="IPooledChannelFactory{TChannel}.Renew"/>): the old factory serves the channels it opened until they
    /// retire, and closes after the last. <see langword="null"/>, the default, never renews it here; the WCF adapter
    /// renews an HTTP binding's factory every 5 minutes, because each WCF factory owns one <c>HttpClient</c> whose pooled
    /// connections would otherwise never see a DNS change. At least 1 s.
    /// </summary>
    public TimeSpan? FactoryLifetime { get; set; }

    /// <summary>
    /// Gets or sets what an acquire does while the pool is paused (<see cref="DefaultChannelPool{TChannel}.Pause"/>).
    /// Defaults to <see cref="PausedAcquireMode.Fail"/>: it throws <see cref="ChannelPoolUnavailableException"/> at
    /// once, saying the pool is paused.
    /// </summary>
    public PausedAcquireMode AcquireWhilePaused { get; set; } = PausedAcquireMode.Fail;

    /// <summary>
    /// Gets or sets the rule that says an error means every channel opened so far is suspect: for example the service's
    /// certificate changed, or it restarted and forgot its security sessions. It is asked about the error of every failed
    /// open attempt, and of every channel that comes back broken or unusable with an error
    /// (<see cref="ChannelLease{TChannel}.MarkBroken(Exception)"/>, or the factory's
    /// <see cref="IPooledChannelFactory{TChannel}.GetFailure"/>). When it says yes, the pool clears: every channel opened
    /// before that failure retires, as <see cref="DefaultChannelPool{TChannel}.ClearAsync"/> does. <see langword="null"/>,
    /// the default, clears on no error; the WCF adapter uses its own rule for null (see
    /// <c>ChannelPool.ServiceModel.FatalErrors</c>).
    /// </summary>
    /// <remarks>
    /// It runs on the thread that saw the error, so keep it cheap. A rule that throws is logged as an error naming the
    /// pool, and the error is taken as not fatal. Code only: configuration cannot bind it.
    /// </remarks>
    public Func<Exception, bool>? IsFatalError { get; set; }

    /// <summary>
    /// Gets or sets how many opens may be in flight at once. Defaults to 4. Opens never take the pool above
    /// <see cref="MaxChannels"/>, whatever this says.
    /// </summary>
    [Range(1, int.MaxValue)]
    public int MaxConcurrentOpens { get; set; } = 4;

    /// <summary>
    /// Gets or sets how long a graceful close may take before the channel is aborted instead. Defaults to 10 seconds.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00", "1.00:00:00", MinimumIsExclusive = true)]
    public TimeSpan CloseTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Gets or sets how long disposing the pool waits for leased channels to come back before aborting them.
    /// Defaults to 30 seconds.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00", "1.00:00:00")]
    public TimeSpan DrainTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Gets or sets how the pool sets its idle target, the idle count a refill fills back up to: fixed at
    /// <see cref="PoolSize"/> (the default), or adaptive, following demand between a minimum and
    /// <see cref="MaxChannels"/>.
    /// </summary>
    // Validated on its own, with its section's name in each message (ChannelPoolOptionsValidator).
#pragma warning disable SYSLIB1212
    [Required]
    public IdleTargetOptions IdleTarget { get; set; } = new();
#pragma warning restore SYSLIB1212

    /// <summary>
    /// Gets or sets the strategies of the default open pipeline, as Polly's own options: total timeout, retry, circuit
    /// breaker, attempt timeout. Not used when <see cref="OpenPipeline"/> is set.
    /// </summary>
    // Validated on its own, and only when no OpenPipeline replaces it (ChannelPoolOptionsValidator).
#pragma warning disable SYSLIB1212
    [Required]
    public OpenResilienceOptions Resilience { get; set; } = new();
#pragma warning restore SYSLIB1212

    /// <summary>
    /// Gets or sets a pipeline to run every open through instead of the one built from <see cref="Resilience"/>, for
    /// example one from Polly's <c>ResiliencePipelineProvider&lt;string&gt;</c> (the hosting package's
    /// <c>UseOpenPipeline(key)</c> does that). It should include a circuit breaker: the pool pauses opens and fails
    /// waiting callers fast when the pipeline throws a <see cref="Polly.CircuitBreaker.BrokenCircuitException"/>, and its
    /// snapshot then reports the breaker as the pipeline last showed it.
    /// </summary>
    public ResiliencePipeline? OpenPipeline { get; set; }

    /// <summary>Creates options with every default.</summary>
    public ChannelPoolOptions()
    {
    }

    /// <summary>
    /// Creates a copy of <paramref name="other"/>, for example for one of several pools built from the same settings
    /// under different names. Values left <see langword="null"/> stay <see langword="null"/>, so they keep following
    /// their defaults in the copy; <see cref="IdleTarget"/> is copied too. <see cref="Resilience"/> and
    /// <see cref="OpenPipeline"/> are shared, not copied: they describe one pipeline.
    /// </summary>
    /// <param name="other">The options to copy.</param>
    public ChannelPoolOptions(ChannelPoolOptions other)
    {
        ArgumentNullException.ThrowIfNull(other);
        Name = other.Name;
        PoolSize = other.PoolSize;
        MaxChannels = other.MaxChannels;
        RefillThreshold = other.RefillThreshold;
        ChannelLifetime = other.ChannelLifetime;
        LifetimeJitter = other.LifetimeJitter;
        CleanupInterval = other.CleanupInterval;
        IdleTimeout = other.IdleTimeout;
        LeaseMode = other.LeaseMode;
        IdleOrder = other.IdleOrder;
        MaxLeasesPerChannel = other.MaxLeasesPerChannel;
        LeaseSharing = other.LeaseSharing;
        AcquireTimeout = other.AcquireTimeout;
        MaxConcurrentOpens = other.MaxConcurrentOpens;
        CloseTimeout = other.CloseTimeout;
        DrainTimeout = other.DrainTimeout;
        LeakDetectionThreshold = other.LeakDetectionThreshold;
        FactoryLifetime = other.FactoryLifetime;
        AcquireWhilePaused = other.AcquireWhilePaused;
        IsFatalError = other.IsFatalError;
        IdleTarget = new IdleTargetOptions(other.IdleTarget);
        Resilience = other.Resilience;
        OpenPipeline = other.OpenPipeline;
    }
}
