using System.CommandLine;
using System.Globalization;

namespace ChannelPool.Perf.Scenarios;

/// <summary>
/// How scenarios declare their options: bounded numbers and known names refused at parse time with the bound or the
/// names in the message. <see cref="SettingsBinder{TSettings}"/> ties each option to the setting it sets.
/// </summary>
internal static class ScenarioOptions
{
    /// <param name="unit">Said after the bounds in the error, for example <c>bytes</c>.</param>
    public static Option<int> PositiveInt(string name, string description, int defaultValue, int max = int.MaxValue, int min = 1, string? unit = null)
    {
        var option = new Option<int>(name) { Description = $"{description} Default: {defaultValue.ToString(CultureInfo.InvariantCulture)}.", DefaultValueFactory = _ => defaultValue };
        option.Validators.Add(r =>
        {
            var value = r.GetValueOrDefault<int>();
            if (value < min || value > max)
            {
                r.AddError(min == 1 && max == int.MaxValue
                    ? $"{name} must be at least 1; got {value}."
                    : $"{name} must be from {min} to {max}{(unit is null ? string.Empty : " " + unit)}; got {value}.");
            }
        });
        return option;
    }

    public static Option<double> PositiveDouble(string name, string description, double defaultValue)
    {
        var option = new Option<double>(name) { Description = $"{description} Default: {defaultValue.ToString(CultureInfo.InvariantCulture)}.", DefaultValueFactory = _ => defaultValue };
        option.Validators.Add(r =>
        {
            var value = r.GetValueOrDefault<double>();
            if (!(value > 0) || double.IsInfinity(value))
            {
                r.AddError($"{name} must be a positive number; got {value.ToString(CultureInfo.InvariantCulture)}.");
            }
        });
        return option;
    }

    /// <summary>Names from <paramref name="known"/>, several at once, or <c>all</c>; anything else is refused with the names to use.</summary>
    /// <param name="description">What the names choose, for example <c>Bindings to run</c>.</param>
    public static Option<string[]> Names(string name, string description, IReadOnlyList<string> known)
    {
        var option = new Option<string[]>(name)
        {
            Description = $"{description}: {string.Join(", ", known)}, or all (default).",
            DefaultValueFactory = _ => ["all"],
            AllowMultipleArgumentsPerToken = true,
        };
        option.Validators.Add(r =>
        {
            foreach (var value in r.GetValueOrDefault<string[]>() ?? [])
            {
                if (value != "all" && !known.Contains(value))
                {
                    r.AddError($"Unknown {name} '{value}'; use {string.Join(", ", known)} or all.");
                }
            }
        });
        return option;
    }

    /// <summary>The names given, in <paramref name="known"/>'s order, or all of them for <c>all</c>.</summary>
    public static string[] Chosen(string[] names, IReadOnlyList<string> known) => names.Contains("all") ? [.. known] : [.. known.Where(names.Contains)];

    /// <summary>Several numbers at once, each from <paramref name="min"/> to <paramref name="max"/>.</summary>
    public static Option<T[]> Many<T>(string name, string description, T[] defaultValue, T min, T max, string? unit = null)
        where T : struct, IComparable<T>, IFormattable
    {
        var option = new Option<T[]>(name)
        {
            Description = $"{description} Default: {string.Join(' ', defaultValue.Select(v => v.ToString(null, CultureInfo.InvariantCulture)))}.",
            DefaultValueFactory = _ => defaultValue,
            AllowMultipleArgumentsPerToken = true,
        };
        option.Validators.Add(r =>
        {
            foreach (var value in r.GetValueOrDefault<T[]>() ?? [])
            {
                if (value.CompareTo(min) < 0 || value.CompareTo(max) > 0)
                {
                    r.AddError($"{name} values must be from {min.ToString(null, CultureInfo.InvariantCulture)} to {max.ToString(null, CultureInfo.InvariantCulture)}{(unit is null ? string.Empty : " " + unit)}; got {value.ToString(null, CultureInfo.InvariantCulture)}.");
                }
            }
        });
        return option;
    }

    public static bool IsExplicit(ParseResult parse, Option option) => parse.GetResult(option) is { Implicit: false };
}

/// <summary>
/// A scenario's options, each declared once with the setting it sets. Reading applies only what the command line set,
/// over a basis (the defaults, or the quick sizes in a <c>--quick</c> run), so a value left out keeps the basis's.
/// </summary>
/// <typeparam name="TSettings">The scenario's settings record.</typeparam>
internal sealed class SettingsBinder<TSettings>
    where TSettings : class
{
    private readonly List<(Option Option, Func<ParseResult, TSettings, TSettings> Apply)> _bound = [];

    /// <summary>Declares <paramref name="option"/>, which sets the settings through <paramref name="set"/> when given.</summary>
    /// <returns>The option, for validators that compare it with another.</returns>
    public Option<T> Add<T>(Option<T> option, Func<TSettings, T, TSettings> set)
    {
        _bound.Add((option, (parse, settings) => ScenarioOptions.IsExplicit(parse, option) ? set(settings, parse.GetValue(option)!) : settings));
        return option;
    }

    /// <summary>Declares an option read by hand (it sets nothing here), so that it is still added to the command.</summary>
    public Option<T> Add<T>(Option<T> option)
    {
        _bound.Add((option, (_, settings) => settings));
        return option;
    }

    /// <summary>Adds every option to <paramref name="command"/>, except those another scenario of the same command added.</summary>
    public void AddTo(Command command)
    {
        foreach (var (option, _) in _bound.Where(b => !command.Options.Contains(b.Option)))
        {
            command.Add(option);
        }
    }

    public TSettings Read(ParseResult parse, TSettings basis) => _bound.Aggregate(basis, (settings, bound) => bound.Apply(parse, settings));
}
