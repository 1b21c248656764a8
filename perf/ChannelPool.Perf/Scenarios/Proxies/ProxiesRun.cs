using System.Diagnostics;
using System.Globalization;
using System.ServiceModel;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Servers;
using ChannelPool.Perf.Stats;
using ChannelPool.ServiceModel;
using ChannelPool.Testing.ServiceModel;
using Spectre.Console;
using static ChannelPool.Perf.Scenarios.Proxies.ProxiesScenario;

namespace ChannelPool.Perf.Scenarios.Proxies;

/// <summary>
/// Per-call, per-call with the WCF factory cache, pooled single-use, pooled reuse and singleton WCF proxies, making
/// the same echo calls on each binding the WCF test services serve, at several concurrencies; a binding with sessions
/// runs against each service setting (a session's calls at once, or one at a time as WCF's defaults serve them). The
/// test services run in the server process and count connections, TLS handshakes and sessions, so each cell shows
/// where its opens happened.
/// </summary>
internal sealed class ProxiesRun(PerfContext context, ProxiesSettings settings)
{
    public async Task<IReadOnlyList<ProxiesResult>> RunAsync(CancellationToken cancellationToken)
    {
        var endpoints = context.Server.Endpoints.Wcf
            ?? throw new InvalidOperationException("The proxies scenario needs the WCF test services; run it against the embedded servers.");
        var results = new List<ProxiesResult>();
        foreach (var name in settings.Bindings)
        {
            // A binding without sessions is served at once under either setting, so it runs once. Each target keeps
            // one address object: WCF's factory cache (the cached-factory kind) cannot compare two equal addresses with
            // a DNS identity (EndpointIdentity.GetHashCode is not supported), only the same one.
            var targets = (WcfBinding.HasSessions(name) ? settings.Services : settings.Services.Take(1))
                .Select(service => new WcfBinding(name, service, endpoints)).ToList();

            // An unreported pass of every kind first, long enough for tier-up, so JIT and start-up costs land on no kind
            // in particular. Once per binding: the client's code path is the same whichever way the service serves it.
            foreach (var kind in settings.Kinds)
            {
                await WarmUpAsync(targets[0], kind, settings.WarmUpCalls, settings.WarmUpTime, cancellationToken);
            }

            foreach (var binding in targets)
            {
                // A session that carries one call is served alike under either setting: those kinds run under the first.
                var kinds = binding == targets[0] ? settings.Kinds : [.. settings.Kinds.Where(k => !OneCallPerSession(k))];
                foreach (var concurrency in settings.Concurrency)
                {
                    results.AddRange(await RunCellsAsync(binding, kinds, concurrency, cancellationToken));
                }
            }
        }

        return results;
    }

    /// <summary>
    /// Runs every kind on one binding, service setting and concurrency in paired rounds: every kind's proxy is set up
    /// and warmed at this concurrency first, then each round gives every kind one turn, in reverse order every other
    /// round (A B, B A, A B, …), so each round's turns ran next to each other under the same load and pair up.
    /// </summary>
    private async Task<IEnumerable<ProxiesResult>> RunCellsAsync(WcfBinding binding, IReadOnlyList<string> kinds, int concurrency, CancellationToken cancellationToken)
    {
        var cells = kinds.ToDictionary(kind => kind, _ => new Cell());
        var proxies = new Dictionary<string, ProxyKind>();
        var label = $"proxies: {binding.Description}, {binding.Service}{ServiceTime()}, concurrency {concurrency}";
        try
        {
            await context.Console.Status().StartAsync(Markup.Escape(label), async status =>
            {
                foreach (var kind in kinds)
                {
                    status.Status(Markup.Escape($"{label}, {kind}: setting up"));
                    var before = await context.Server.GetStatsAsync(cancellationToken);
                    proxies[kind] = await ProxyKind.StartAsync(kind, binding, concurrency, (int)settings.ServiceTime.TotalMilliseconds, settings.SharedLeasesPerChannel, cancellationToken);

                    // An unrecorded turn at this concurrency: the proxy's first calls, the thread pool's growth to this
                    // many callers and the tier-up of what this concurrency runs land outside every round.
                    var calls = Math.Min(CallsPerRound(0), settings.CellWarmUpCalls);
                    await RunCallsAsync(proxies[kind], concurrency, calls, Deadline(Shortest(settings.RoundTimeOf(kind), settings.CellWarmUpTime)), latency: null, cancellationToken);
                    await proxies[kind].QuiesceAsync(cancellationToken);
                    cells[kind].WarmUp = Add(cells[kind].WarmUp, binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken)) - binding.CountersOf(before));
                }

                // Set-up garbage (a pool's 50 handshakes against a singleton's one) is collected before the first
                // round, on both sides, so no kind pays inside its turns for what it did before them.
                await context.Server.SettleAsync(cancellationToken);
                PerfServer.Settle();

                var previous = string.Empty;
                for (var round = 0; round < settings.Rounds; round++)
                {
                    var order = round % 2 == 0 ? kinds : kinds.Reverse();
                    foreach (var kind in order)
                    {
                        // A turn of a kind with a session a call leaves hundreds of closed connections' garbage and
                        // teardown in both processes, which the kind after it would pay inside its turn (suspected in
                        // the suite of 15:00 UTC, 2026-11-24: pooled reuse, right after single-use, read 0.90x of the
                        // singleton on WSHttp SecureConversation where the exclusive kind, the same settings there,
                        // read 0.99x; one-caller cells stay noisy with it). Both sides settle before the first turn
                        // after such a block.
                        if (OneCallPerSession(previous) && !OneCallPerSession(kind))
                        {
                            await context.Server.SettleAsync(cancellationToken);
                            PerfServer.Settle();
                        }

                        previous = kind;
                        status.Status(Markup.Escape($"{label}, {kind} (round {round + 1} of {settings.Rounds})"));
                        await RunTurnAsync(binding, proxies[kind], concurrency, CallsPerRound(round), cells[kind], settings.RoundTimeOf(kind), cancellationToken);
                    }
                }

                status.Status(Markup.Escape($"{label}: closing"));
            });
        }
        finally
        {
            foreach (var proxy in proxies.Values)
            {
                await proxy.DisposeAsync();
            }
        }

        var results = kinds.Select(kind => cells[kind].ToResult(binding.Description, binding.Service, settings.ServiceTime.TotalMilliseconds, kind, concurrency)).ToList();
        foreach (var result in results)
        {
            context.Console.MarkupLine(Markup.Escape(
                $"  {binding.Description}, {binding.Service}{ServiceTime()}, concurrency {concurrency}, {result.Kind}: {result.CallsPerSecond:N0} calls/s, p50 {result.Latency.P50Ms:0.000} ms, " +
                $"p99 {result.Latency.P99Ms:0.000} ms, {result.CpuMicrosPerCall:N0} µs CPU/call ({result.ServerCpuMicrosPerCall:N0} server), {result.AllocatedBytesPerCall:N0} B/call, " +
                $"{result.DuringCalls.TlsHandshakes:N0} handshakes during calls ({result.WarmUp.TlsHandshakes:N0} in warm-up)" +
                (result.WarmUp.Negotiations + result.DuringCalls.Negotiations > 0
                    ? $", {result.DuringCalls.Negotiations:N0} negotiations during calls ({result.WarmUp.Negotiations:N0} in warm-up)"
                    : string.Empty) +
                $"; rounds {string.Join(" ", result.RoundCallsPerSecond.Select(rate => rate.ToString("N0", CultureInfo.InvariantCulture)))}"));
        }

        foreach (var (kind, baseline) in results.Select(r => r.Kind).Where(k => k != Singleton).Select(k => (k, Singleton)))
        {
            if (cells.TryGetValue(baseline, out var b) && PairedRatio.Of(cells[kind].RoundRates, b.RoundRates) is { } ratio)
            {
                context.Console.MarkupLine(Markup.Escape($"  {binding.Description}, {binding.Service}{ServiceTime()}, concurrency {concurrency}, {kind} / {baseline}: {ratio} over {ratio.Rounds} rounds"));
            }
        }

        return results;
    }

    private int CallsPerRound(int round) => (settings.Calls / settings.Rounds) + (round < settings.Calls % settings.Rounds ? 1 : 0);

    private static TimeSpan? Shortest(TimeSpan? a, TimeSpan b) => a is { } limit && limit < b ? limit : b;

    private static long Deadline(TimeSpan? maxTime) => maxTime is { } limit ? Stopwatch.GetTimestamp() + (long)(limit.TotalSeconds * Stopwatch.Frequency) : long.MaxValue;

    /// <summary>One kind's turn in a round, timed; what the pool does after it (a single-use pool's refill) is left out of every turn.</summary>
    private async Task RunTurnAsync(WcfBinding binding, ProxyKind proxies, int concurrency, int calls, Cell cell, TimeSpan? maxTime, CancellationToken cancellationToken)
    {
        var serverBefore = await context.Server.GetStatsAsync(cancellationToken);
        var cpuBefore = Environment.CpuUsage.TotalTime;
        var allocatedBefore = GC.GetTotalAllocatedBytes(precise: true);
        var started = Stopwatch.GetTimestamp();
        var done = await RunCallsAsync(proxies, concurrency, calls, Deadline(maxTime), cell.Latency, cancellationToken);
        var seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
        cell.Seconds += seconds;
        cell.CpuSeconds += (Environment.CpuUsage.TotalTime - cpuBefore).TotalSeconds;
        cell.AllocatedBytes += GC.GetTotalAllocatedBytes(precise: true) - allocatedBefore;
        cell.Calls += done;
        cell.RoundRates.Add(done / seconds);
        var after = await context.Server.GetStatsAsync(cancellationToken);
        cell.ServerCpuSeconds += after.CpuSeconds - serverBefore.CpuSeconds;
        cell.DuringCalls = Add(cell.DuringCalls, binding.CountersOf(after) - binding.CountersOf(serverBefore));

        if (await proxies.QuiesceAsync(cancellationToken))
        {
            cell.WarmUp = Add(cell.WarmUp, binding.CountersOf(await context.Server.GetStatsAsync(cancellationToken)) - binding.CountersOf(after));
        }
    }

    /// <returns>The calls made.</returns>
    private static async Task<int> RunCallsAsync(ProxyKind proxies, int concurrency, int calls, long deadline, LatencyRecorder? latency, CancellationToken cancellationToken)
    {
        var done = 0;
        var next = -1;
        var workers = Enumerable.Range(0, concurrency).Select(_ => Task.Run(
            async () =>
            {
                for (var i = Interlocked.Increment(ref next); i < calls && Stopwatch.GetTimestamp() < deadline; i = Interlocked.Increment(ref next))
                {
                    var callStarted = Stopwatch.GetTimestamp();
                    await proxies.CallAsync("ping " + i.ToString(CultureInfo.InvariantCulture), cancellationToken);
                    latency?.RecordSince(callStarted);
                    Interlocked.Increment(ref done);
                }
            },
            cancellationToken));
        await Task.WhenAll(workers);
        return done;
    }

    private async Task WarmUpAsync(WcfBinding binding, string kind, int calls, TimeSpan maxTime, CancellationToken cancellationToken)
    {
        const int Concurrency = 2;
        var label = $"proxies: {binding.Description}, {binding.Service}{ServiceTime()}, {kind} (warm-up)";
        await context.Console.Status().StartAsync(Markup.Escape(label), async status =>
        {
            await using var proxies = await ProxyKind.StartAsync(kind, binding, Concurrency, (int)settings.ServiceTime.TotalMilliseconds, settings.SharedLeasesPerChannel, cancellationToken);
            await RunCallsAsync(proxies, Concurrency, calls, Deadline(maxTime), latency: null, cancellationToken);
            status.Status(Markup.Escape($"{label}: closing"));
        });
    }

    private string ServiceTime() => settings.ServiceTime > TimeSpan.Zero ? $", {settings.ServiceTime.TotalMilliseconds:0} ms a call" : string.Empty;

    private static ServerCountsSnapshot Add(ServerCountsSnapshot a, ServerCountsSnapshot b) => new(
        a.Connections + b.Connections, a.TlsHandshakes + b.TlsHandshakes, a.SessionsStarted + b.SessionsStarted, a.SessionsEnded + b.SessionsEnded, a.Calls + b.Calls, a.EndRecords + b.EndRecords,
        a.Negotiations + b.Negotiations);

    /// <summary>One cell's totals over its rounds.</summary>
    private sealed class Cell
    {
        public LatencyRecorder Latency { get; } = new();

        public int Calls { get; set; }

        public double Seconds { get; set; }

        public double CpuSeconds { get; set; }

        /// <summary>Gets or sets the server process's CPU time during the rounds; NaN for a remote server.</summary>
        public double ServerCpuSeconds { get; set; }

        public long AllocatedBytes { get; set; }

        public ServerCountsSnapshot WarmUp { get; set; }

        public ServerCountsSnapshot DuringCalls { get; set; }

        /// <summary>Gets the calls per second of each round's turn, in round order, which pair with the other kinds' turns.</summary>
        public List<double> RoundRates { get; } = [];

        public ProxiesResult ToResult(string binding, string service, double serviceTimeMs, string kind, int concurrency) => new(
            binding, service, serviceTimeMs, kind, concurrency, Calls, Seconds, Calls / Seconds, Latency.Summarize(), CpuSeconds * 1e6 / Calls, (double)AllocatedBytes / Calls, WarmUp, DuringCalls, ServerCpuSeconds * 1e6 / Calls, RoundRates);
    }

    /// <summary>How one kind of proxy is set up, called and torn down.</summary>
    private sealed class ProxyKind(Func<string, CancellationToken, Task> call, Func<ValueTask> stop, ServiceChannelPool<IEchoClient>? pool = null) : IAsyncDisposable
    {
        private long _openedWhenQuiet = -1;

        /// <param name="serviceTime">Milliseconds the service spends on each call; 0 calls <c>Echo</c>, which answers at once.</param>
        /// <param name="sharedLeasesPerChannel">The <see cref="ChannelPoolOptions.MaxLeasesPerChannel"/> of the shared kind.</param>
        public static async Task<ProxyKind> StartAsync(string kind, WcfBinding binding, int concurrency, int serviceTime, int sharedLeasesPerChannel, CancellationToken cancellationToken)
        {
            Task<string> Call(IEchoClient client, string message) => serviceTime > 0 ? client.EchoAfterAsync(message, serviceTime) : client.EchoAsync(message);

            var wcfBinding = binding.CreateBinding();
            switch (kind)
            {
                case PerCall:
                    return new ProxyKind(
                        async (message, _) =>
                        {
                            var client = new EchoClient(wcfBinding, binding.Address);
                            binding.Configure(client.ClientCredentials);
                            await CallAndCloseAsync(client, Call(client, message));
                        },
                        () => ValueTask.CompletedTask);
                case PerCallCached:
                {
                    // AlwaysOn makes every proxy built with this binding object and address share one cached, opened
                    // ChannelFactory, whose credentials are then read-only: only the first proxy can set them.
                    var first = new CachedEchoClient(wcfBinding, binding.Address);
                    binding.Configure(first.ClientCredentials);
                    await Task.Factory.FromAsync(((ICommunicationObject)first).BeginOpen, ((ICommunicationObject)first).EndOpen, state: null);
                    await CloseAsync(first);
                    return new ProxyKind(
                        async (message, _) =>
                        {
                            var client = new CachedEchoClient(wcfBinding, binding.Address);
                            if (client.ChannelFactory.State == CommunicationState.Created)
                            {
                                binding.Configure(client.ClientCredentials);
                            }

                            await CallAndCloseAsync(client, serviceTime > 0 ? client.EchoAfterAsync(message, serviceTime) : client.EchoAsync(message));
                        },
                        () => ValueTask.CompletedTask);
                }

                case Singleton:
                {
                    var client = new EchoClient(wcfBinding, binding.Address);
                    binding.Configure(client.ClientCredentials);
                    ICommunicationObject communication = client;
                    await Task.Factory.FromAsync(communication.BeginOpen, communication.EndOpen, state: null);
                    return new ProxyKind((message, _) => Call(client, message), () => new ValueTask(CloseAsync(client)));
                }

                default:
                {
                    // Library defaults, as an application that swapped its proxy's base class would run: pooled reuse
                    // and single-use as they are, the other pooled kinds with one setting changed.
                    var options = new ChannelPoolOptions
                    {
                        Name = $"perf-{binding.Name}-{kind.Replace(' ', '-')}-{concurrency}",
                        LeaseMode = kind == PooledSingleUse ? LeaseMode.SingleUse : LeaseMode.Reuse,
                        IdleOrder = kind == PooledReuseLeastRecentlyUsed ? IdleOrder.LeastRecentlyUsed : IdleOrder.MostRecentlyUsed,
                    };
                    switch (kind)
                    {
                        case PooledReuseExclusive:
                            options.MaxLeasesPerChannel = 1;
                            break;
                        case PooledReuseShared:
                            (options.MaxLeasesPerChannel, options.LeaseSharing) = (sharedLeasesPerChannel, LeaseSharing.Always);
                            break;
                        case PooledReuseAdaptive:
                            options.MaxLeasesPerChannel = sharedLeasesPerChannel;
                            break;
                    }

                    var pool = new ServiceChannelPool<IEchoClient>(wcfBinding, binding.Address, options, factory => binding.Configure(factory.Credentials));
                    await pool.WarmUpAsync(pool.PoolSize, cancellationToken);
                    Func<string, CancellationToken, Task> call = async (message, token) =>
                    {
                        var proxy = new PooledEchoClient(pool);
                        try
                        {
                            await proxy.OpenAsync(token);
                            await Call(proxy, message);
                        }
                        finally
                        {
                            proxy.Close();
                        }
                    };
                    if (options.LeaseMode == LeaseMode.Reuse)
                    {
                        await GrowToLoadAsync(pool, concurrency, call, cancellationToken);
                    }

                    return new ProxyKind(call, pool.DisposeAsync, pool);
                }
            }
        }

        public Task CallAsync(string message, CancellationToken cancellationToken) => call(message, cancellationToken);

        /// <summary>
        /// Waits until the pool has stopped opening and closing channels (at most 10 s): a single-use pool refills after
        /// its turn, and left running, its handshakes would land in the next kind's turn.
        /// </summary>
        /// <returns>Whether the pool had anything to finish.</returns>
        public async Task<bool> QuiesceAsync(CancellationToken cancellationToken)
        {
            if (pool is null)
            {
                return false;
            }

            // A pool that opened and closed nothing since it was last quiet (a reuse pool at its load) costs no wait.
            var snapshot = pool.GetSnapshot();
            if (snapshot.Opening == 0 && snapshot.Closing == 0 && snapshot.TotalOpened == _openedWhenQuiet)
            {
                return false;
            }

            var giveUp = Stopwatch.GetTimestamp() + (10 * Stopwatch.Frequency);
            var opened = -1L;
            var quietPolls = 0;
            while (quietPolls < 3 && Stopwatch.GetTimestamp() < giveUp)
            {
                snapshot = pool.GetSnapshot();
                quietPolls = snapshot.Opening == 0 && snapshot.Closing == 0 && snapshot.TotalOpened == opened ? quietPolls + 1 : 0;
                opened = snapshot.TotalOpened;
                await Task.Delay(10, cancellationToken);
            }

            _openedWhenQuiet = opened;
            return true;
        }

        /// <summary>
        /// Lets a reuse pool grow to the size its load asks for before the clock starts: with <paramref name="concurrency"/>
        /// channels leased, fewer than the refill threshold may be idle, and the pool opens more in the background, as
        /// an app's pool does once, in its first second at that load. Left in, a cell of a second or two paid those
        /// handshakes (48 in the 2026-11-24 suite's net.tcp cell at 32 callers), which a pool at steady state does not.
        /// </summary>
        private static async Task GrowToLoadAsync(ServiceChannelPool<IEchoClient> pool, int concurrency, Func<string, CancellationToken, Task> call, CancellationToken cancellationToken)
        {
            // The pool opens only while channels are leased, so the load stays on until it has stopped opening.
            using var grown = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            grown.CancelAfter(TimeSpan.FromSeconds(10));
            var callers = Enumerable.Range(0, concurrency).Select(caller => Task.Run(
                async () =>
                {
                    while (!grown.IsCancellationRequested)
                    {
                        await call("grow " + caller.ToString(CultureInfo.InvariantCulture), cancellationToken);
                    }
                },
                cancellationToken)).ToList();
            var opened = -1L;
            var quietSince = Stopwatch.GetTimestamp();
            while (!grown.IsCancellationRequested && !callers.Any(c => c.IsFaulted))
            {
                var snapshot = pool.GetSnapshot();
                if (snapshot.TotalOpened != opened || snapshot.Opening > 0)
                {
                    opened = snapshot.TotalOpened;
                    quietSince = Stopwatch.GetTimestamp();
                }
                else if (Stopwatch.GetElapsedTime(quietSince) > TimeSpan.FromMilliseconds(200))
                {
                    break;
                }

                await Task.Delay(20, CancellationToken.None);
            }

            await grown.CancelAsync();
            await Task.WhenAll(callers);
        }

        public ValueTask DisposeAsync() => stop();

        private static async Task CallAndCloseAsync(ICommunicationObject client, Task call)
        {
            try
            {
                await call;
            }
            catch
            {
                client.Abort();
                throw;
            }

            await CloseAsync(client);
        }

        private static Task CloseAsync(ICommunicationObject client) => Task.Factory.FromAsync(client.BeginClose, client.EndClose, state: null);
    }
}
