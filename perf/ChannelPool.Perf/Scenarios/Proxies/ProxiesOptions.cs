using System.CommandLine;
using ChannelPool.Perf.Clients;
using ChannelPool.Testing.ServiceModel;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Proxies;

/// <summary>The options of the proxies and original commands: calls and bindings for both; the service's settings, concurrency, rounds and kinds for proxies.</summary>
internal sealed class ProxiesOptions
{
    private readonly Option<string[]> _binding = new("--binding")
    {
        Description = $"Bindings to run: {string.Join(", ", WcfBinding.All)}, or all (default).",
        DefaultValueFactory = _ => ["all"],
        AllowMultipleArgumentsPerToken = true,
    };

    private readonly Option<string[]> _service = new("--service")
    {
        Description = $"How the service serves one session's calls, for the bindings with sessions (nettcp, wshttp-sct): {Concurrent} (ConcurrencyMode.Multiple), {Single} (one at a time, WCF's defaults: PerSession and ConcurrencyMode.Single), or both (default). Bindings without sessions run once.",
        DefaultValueFactory = _ => ["both"],
        AllowMultipleArgumentsPerToken = true,
    };

    private readonly Option<int> _serviceTime = new("--service-time")
    {
        Description = $"Milliseconds the service spends on each call, waiting as on a database (0 to {TestContract.MaxServiceTimeMilliseconds}). 0 answers at once. Default: 0.",
        DefaultValueFactory = _ => 0,
    };

    private readonly Option<string[]> _kind = new("--kind")
    {
        Description = $"Kinds of proxy to run: {string.Join(", ", ProxiesScenario.SelectableKinds.Select(k => $"'{k}'"))}. Default: all but the last, which measures the other idle order.",
        AllowMultipleArgumentsPerToken = true,
    };

    private readonly Option<double?> _roundTime = new("--round-time")
    {
        Description = $"Seconds each kind's turn in a round may run at most (0.01 to {MaxRoundSeconds}); a turn also ends after its share of --calls. Short turns in many --rounds pair up best. Default: no limit.",
    };

    public const int MaxRoundSeconds = 600;

    /// <summary>Gets the option that runs the main job's proxies cells alone, to time or check them without the other scenarios.</summary>
    public Option<bool> Suite { get; } = new("--suite") { Description = "Run the main job's proxies cells, with its settings (every other option but --quick is ignored), to time or check them alone." };

    public const string Concurrent = "concurrent";
    public const string Single = "single";

    /// <summary>Initializes a new instance of the <see cref="ProxiesOptions"/> class.</summary>
    public ProxiesOptions()
    {
        _service.AcceptOnlyFromAmong(Concurrent, Single, "both");
        _serviceTime.Validators.Add(r =>
        {
            var value = r.GetValueOrDefault<int>();
            if (value is < 0 or > TestContract.MaxServiceTimeMilliseconds)
            {
                r.AddError($"--service-time must be from 0 to {TestContract.MaxServiceTimeMilliseconds} milliseconds; got {value}.");
            }
        });
        _kind.AcceptOnlyFromAmong(ProxiesScenario.SelectableKinds);
        _roundTime.Validators.Add(r =>
        {
            if (r.GetValueOrDefault<double?>() is { } value && !(value is >= 0.01 and <= MaxRoundSeconds))
            {
                r.AddError($"--round-time must be from 0.01 to {MaxRoundSeconds} seconds; got {value.ToString(System.Globalization.CultureInfo.InvariantCulture)}.");
            }
        });
        Concurrency.Validators.Add(r =>
        {
            foreach (var value in r.GetValueOrDefault<int[]>() ?? [])
            {
                if (value is < 1 or > 1024)
                {
                    r.AddError($"--concurrency values must be from 1 to 1024; got {value}.");
                }
            }
        });
        _binding.Validators.Add(r =>
        {
            foreach (var name in r.GetValueOrDefault<string[]>() ?? [])
            {
                if (name != "all" && !WcfBinding.All.Contains(name))
                {
                    r.AddError($"Unknown --binding '{name}'; use {string.Join(", ", WcfBinding.All)} or all.");
                }
            }
        });
    }

    public Option<int> Calls { get; } = PositiveInt("--calls", "Calls per cell.", 20_000);

    public Option<int> SharedLeasesPerChannel { get; } = PositiveInt(
        "--leases-per-channel", $"MaxLeasesPerChannel of the '{ProxiesScenario.PooledReuseShared}' and '{ProxiesScenario.PooledReuseAdaptive}' kinds: how many proxies may share one channel.", ProxiesScenario.SharedLeasesPerChannel, max: 64);

    public Option<int> Rounds { get; } = PositiveInt("--rounds", "Paired rounds each cell's calls are split into: every kind takes a turn each round, in reverse order every other round, and a ratio is the median of the rounds' ratios.", 2, max: 200);

    public Option<int[]> Concurrency { get; } = new("--concurrency") { Description = "Concurrent callers; one cell per value. Default: 1 8 32.", DefaultValueFactory = _ => [1, 8, 32], AllowMultipleArgumentsPerToken = true };

    public void AddTo(Command command, bool withConcurrency)
    {
        command.Add(Calls);
        command.Add(_binding);
        if (withConcurrency)
        {
            command.Add(_service);
            command.Add(_serviceTime);
            command.Add(SharedLeasesPerChannel);
            command.Add(Concurrency);
            command.Add(Rounds);
            command.Add(_roundTime);
            command.Add(_kind);
            command.Add(Suite);
        }
    }

    /// <summary>The service settings asked for, concurrent first.</summary>
    public ServiceConcurrency[] Services(ParseResult parse)
    {
        var names = parse.GetValue(_service)!;
        var both = names.Contains("both");
        return [.. new[] { (Concurrent, ServiceConcurrency.Multiple), (Single, ServiceConcurrency.Single) }
            .Where(s => both || names.Contains(s.Item1)).Select(s => s.Item2)];
    }

    /// <summary>The longest a turn may run, or <see langword="null"/> for no limit.</summary>
    public TimeSpan? RoundTime(ParseResult parse) => parse.GetValue(_roundTime) is { } seconds ? TimeSpan.FromSeconds(seconds) : null;

    public TimeSpan ServiceTime(ParseResult parse) => TimeSpan.FromMilliseconds(parse.GetValue(_serviceTime));

    public string[] Kinds(ParseResult parse) =>
        parse.GetValue(_kind) is { Length: > 0 } kinds ? [.. ProxiesScenario.SelectableKinds.Where(kinds.Contains)] : ProxiesScenario.AllKinds;

    public string[] Bindings(ParseResult parse)
    {
        var names = parse.GetValue(_binding)!;
        return names.Contains("all") ? WcfBinding.All : [.. WcfBinding.All.Where(names.Contains)];
    }

    /// <summary>A warm-up of seconds is the point of a real run and a waste in a quick one.</summary>
    /// <param name="settings">The settings to shrink.</param>
    /// <returns>The settings with a 40-call, half-second warm-up.</returns>
    public static ProxiesSettings QuickWarmUp(ProxiesSettings settings) => settings with { WarmUpCalls = 40, WarmUpTime = TimeSpan.FromSeconds(0.5) };
}
