using System.CommandLine;
using System.Globalization;

namespace ChannelPool.Perf.Scenarios;

/// <summary>
/// How scenarios declare and read their options: bounded numbers refused at parse time with the bound in the message,
/// and the <c>--quick</c> rule (a value the command line did not set shrinks to its quick size).
/// </summary>
internal static class ScenarioOptions
{
    public static Option<int> PositiveInt(string name, string description, int defaultValue, int max = int.MaxValue)
    {
        var option = new Option<int>(name) { Description = $"{description} Default: {defaultValue.ToString(CultureInfo.InvariantCulture)}.", DefaultValueFactory = _ => defaultValue };
        option.Validators.Add(r =>
        {
            var value = r.GetValueOrDefault<int>();
            if (value < 1 || value > max)
            {
                r.AddError(max == int.MaxValue ? $"{name} must be at least 1; got {value}." : $"{name} must be from 1 to {max}; got {value}.");
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

    /// <summary>The option's value, or <paramref name="quickValue"/> in a quick run where the command line did not set it.</summary>
    public static T Pick<T>(ParseResult parse, Option<T> option, bool quick, T quickValue) =>
        quick && !IsExplicit(parse, option) ? quickValue : parse.GetValue(option)!;

    /// <summary>The option's value when the command line set it, or <see langword="null"/> to keep the settings' own.</summary>
    public static T? Explicit<T>(ParseResult parse, Option<T> option)
        where T : struct =>
        IsExplicit(parse, option) ? parse.GetValue(option) : null;

    public static bool IsExplicit(ParseResult parse, Option option) => parse.GetResult(option) is { Implicit: false };
}
