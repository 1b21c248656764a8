using System.CommandLine;
using ChannelPool.Perf.Clients;
using static ChannelPool.Perf.Scenarios.ScenarioOptions;

namespace ChannelPool.Perf.Scenarios.Proxies;

/// <summary>The options of the proxies and original commands: calls and bindings for both, concurrency, rounds and kinds for proxies.</summary>
internal sealed class ProxiesOptions
{
    private readonly Option<string[]> _binding = new("--binding")
    {
        Description = $"Bindings to run: {string.Join(", ", WcfBinding.All)}, or all (default).",
        DefaultValueFactory = _ => ["all"],
        AllowMultipleArgumentsPerToken = true,
    };

    private readonly Option<string[]> _kind = new("--kind")
    {
        Description = $"Kinds of proxy to run: {string.Join(", ", ProxiesScenario.SelectableKinds.Select(k => $"'{k}'"))}. Default: all but the last, which measures the other idle order.",
        AllowMultipleArgumentsPerToken = true,
    };

    /// <summary>Initializes a new instance of the <see cref="ProxiesOptions"/> class.</summary>
    public ProxiesOptions()
    {
        _kind.AcceptOnlyFromAmong(ProxiesScenario.SelectableKinds);
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

    public Option<int> Rounds { get; } = PositiveInt("--rounds", "Interleaved rounds each cell's calls are split into; the kinds take turns, in reverse order every other round.", 2, max: 100);

    public Option<int[]> Concurrency { get; } = new("--concurrency") { Description = "Concurrent callers; one cell per value. Default: 1 8 32.", DefaultValueFactory = _ => [1, 8, 32], AllowMultipleArgumentsPerToken = true };

    public void AddTo(Command command, bool withConcurrency)
    {
        command.Add(Calls);
        command.Add(_binding);
        if (withConcurrency)
        {
            command.Add(Concurrency);
            command.Add(Rounds);
            command.Add(_kind);
        }
    }

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
