using System.CommandLine;
using ChannelPool.PollingDuplex;
using Microsoft.AspNetCore.Builder;

namespace ChannelPool.Perf.Scenarios.Broadcast;

/// <summary>
/// A twin of <c>/pubsub</c> that differs from it in one respect, so that what that respect costs is measured side by
/// side in one run: <c>--topic-rule compare</c> or <c>--bounds compare</c> runs our clients against both endpoints
/// (<see cref="PubSubTransportChoice.Twins"/>), the twin's rows listed right after their <c>/pubsub</c> rows.
/// </summary>
internal sealed class TwinEndpoint
{
    /// <summary>
    /// <c>/pubsub-rule</c>: a trivial topic rule that lets every topic through but those under <c>private/</c>. What is
    /// measured is the rule's machinery (the endpoint reads each subscribe and publish and awaits the callback), not the
    /// work of a real rule.
    /// </summary>
    public static TwinEndpoint TopicRule { get; } = new(
        "--topic-rule",
        ["none", "compare"],
        "none (default): our clients on the endpoint with no topic rule; compare: also on one with a trivial rule, side by side.",
        "pubsub-rule",
        "topic rule",
        "A trivial topic rule against none",
        new("a trivial topic rule", MaxCost: 0.05, TwinHasIt: true),
        o => o.Topics.Authorize = static (access, _) => ValueTask.FromResult(!access.Topic.StartsWith("private/", StringComparison.Ordinal)));

    /// <summary>
    /// <c>/pubsub-unbounded</c>: every per-user, per-address, per-session and per-request bound at <see cref="int.MaxValue"/>,
    /// against <c>/pubsub</c>'s defaults (topics as open as <c>/pubsub</c>'s; its sessions per address raised for the perf clients, which share 127.0.0.1).
    /// Neither endpoint has a rate limiter, so nothing throttles the perf clients' polls on either.
    /// </summary>
    public static TwinEndpoint Unbounded { get; } = new(
        "--bounds",
        ["on", "compare"],
        "on (default): our clients on the endpoint with the default per-user and per-session bounds; compare: also on one with every bound at int.MaxValue, side by side.",
        "pubsub-unbounded",
        "unbounded",
        "The bounds on against off",
        new("the per-user and per-session bounds", MaxCost: 0.02, TwinHasIt: false),
        o =>
        {
            o.Topics.AllowAnonymous = true;
            o.MaxSessionsPerUser = int.MaxValue;
            o.MaxSessionsPerAddress = int.MaxValue;
            o.MaxSubscriptionsPerSession = int.MaxValue;
            o.MaxMessagesPerSend = int.MaxValue;
        });

    public static IReadOnlyList<TwinEndpoint> All { get; } = [TopicRule, Unbounded];

    private readonly Option<string> _choice;
    private readonly Action<PollingDuplexOptions> _configure;

    private TwinEndpoint(string option, string[] values, string description, string path, string label, string title, TwinCost cost, Action<PollingDuplexOptions> configure)
    {
        _choice = new Option<string>(option) { Description = description, DefaultValueFactory = _ => values[0] };
        _choice.AcceptOnlyFromAmong(values);
        Path = path;
        _configure = configure;
        Label = label;
        Title = title;
        Cost = cost;
    }

    /// <summary>Gets the twin's path, beside <c>/pubsub</c>.</summary>
    public string Path { get; }

    /// <summary>Gets what the twin's transport names end with: <c>(…, topic rule)</c>.</summary>
    public string Label { get; }

    /// <summary>Gets the title of a report table that sets the twin against <c>/pubsub</c>.</summary>
    public string Title { get; }

    /// <summary>Gets what the difference may cost, and which side has it.</summary>
    public TwinCost Cost { get; }

    /// <summary>Maps every twin, each with <paramref name="configure"/> (the options <c>/pubsub</c> has) and then its difference.</summary>
    public static void MapTwinEndpoints(WebApplication app, Action<PollingDuplexOptions> configure)
    {
        foreach (var twin in All)
        {
            app.MapPollingDuplexPubSub("/" + twin.Path, o =>
            {
                configure(o);
                twin._configure(o);
            });
        }
    }

    /// <summary>Adds the twins' options to <paramref name="command"/>, except those another scenario of the command already added.</summary>
    public static void AddTo(Command command, params TwinEndpoint[] twins)
    {
        foreach (var twin in twins.Where(t => !command.Options.Contains(t._choice)))
        {
            command.Add(twin._choice);
        }
    }

    /// <summary>Gets the name of our clients' transport on this twin, from their name on <c>/pubsub</c>.</summary>
    public string NameFor(string ours) => $"{ours[..^1]}, {Label})";

    /// <summary>Gets the <c>/pubsub</c> transport a twin's transport pairs with.</summary>
    /// <param name="transport">A transport's report name.</param>
    /// <returns>Its <c>/pubsub</c> twin's name, or <see langword="null"/> when <paramref name="transport"/> is not on this twin.</returns>
    public string? Bare(string transport) =>
        transport.EndsWith($", {Label})", StringComparison.Ordinal) ? transport[..^$", {Label})".Length] + ")" : null;

    /// <summary>Gets the twin a transport runs on, or <see langword="null"/> for <c>/pubsub</c> and the peers.</summary>
    public static TwinEndpoint? Of(string transport) => All.FirstOrDefault(t => t.Bare(transport) is not null);

    /// <summary>The twins a command's options ask to compare.</summary>
    public static IReadOnlyList<TwinEndpoint> Compared(ParseResult parse, params TwinEndpoint[] offered) => [.. offered.Where(t => parse.GetValue(t._choice) == "compare")];
}

/// <summary>What a twin's difference may cost a broadcast: at most <paramref name="MaxCost"/> more server CPU per delivery.</summary>
/// <param name="What">The difference, for example <c>a trivial topic rule</c>.</param>
/// <param name="MaxCost">The most it may cost, as a fraction.</param>
/// <param name="TwinHasIt">Whether the twin has it (a rule), or <c>/pubsub</c> does (the bounds).</param>
internal sealed record TwinCost(string What, double MaxCost, bool TwinHasIt)
{
    /// <summary>Gets what the difference costs, from each side's server CPU per delivery.</summary>
    public double Of(double bareCpu, double twinCpu) => TwinHasIt ? twinCpu / bareCpu - 1 : bareCpu / twinCpu - 1;
}
