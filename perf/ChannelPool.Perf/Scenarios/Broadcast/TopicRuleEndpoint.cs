using System.CommandLine;
using ChannelPool.Perf.Clients;
using ChannelPool.PollingDuplex;
using Microsoft.AspNetCore.Builder;

namespace ChannelPool.Perf.Scenarios.Broadcast;

/// <summary>
/// What a topic rule costs: the broadcast and collaboration scenarios' <c>--topic-rule compare</c> runs our clients
/// against <c>/pubsub</c> (no rule, <c>AllowAnonymous</c>) and against <c>/pubsub-rule</c>, the same endpoint with a
/// trivial rule, side by side in one run. The rule is a callback that lets every topic through but those under
/// <c>private/</c>: what is measured is the rule's machinery (the endpoint reads each subscribe and publish and awaits the
/// callback), not the work of a real rule.
/// </summary>
internal static class TopicRuleEndpoint
{
    private const string Path = "pubsub-rule";

    /// <summary>Gets the <c>--topic-rule</c> option, one instance so that a command running both scenarios shows it once.</summary>
    private static Option<string> Choice { get; } = CreateOption();

    /// <summary>Maps <c>/pubsub-rule</c> with <paramref name="configure"/> (the options <c>/pubsub</c> has) and the trivial rule.</summary>
    /// <param name="configure">The no-rule endpoint's options, applied first.</param>
    public static void MapTopicRuleEndpoint(this WebApplication app, Action<PollingDuplexOptions> configure) =>
        app.MapPollingDuplexPubSub("/" + Path, o =>
        {
            configure(o);
            o.Topics.Authorize = static (access, _) => ValueTask.FromResult(!access.Topic.StartsWith("private/", StringComparison.Ordinal));
        });

    /// <summary>Adds <c>--topic-rule</c> to <paramref name="command"/>, unless the other scenario of the command already did.</summary>
    public static void AddTo(Command command)
    {
        if (!command.Options.Contains(Choice))
        {
            command.Add(Choice);
        }
    }

    /// <summary>Reads whether the run compares the rule against no rule.</summary>
    /// <returns>Whether <c>--topic-rule compare</c> was given.</returns>
    public static bool Compare(ParseResult parse) => parse.GetValue(Choice) == "compare";

    /// <summary>
    /// Runs <paramref name="body"/> with the chosen transports, plus, when comparing, our own clients against the rule
    /// endpoint, listed right after ours so their rows sit side by side.
    /// </summary>
    /// <typeparam name="T">What the body measures.</typeparam>
    /// <param name="choice">The transports the command chose.</param>
    /// <param name="compare">Whether to add the rule endpoint's clients.</param>
    /// <returns>What <paramref name="body"/> returned.</returns>
    public static Task<T> UseAsync<T>(PubSubTransportChoice choice, bool compare, PerfContext context, Func<IReadOnlyList<IPubSubTransport>, Task<T>> body) =>
        choice.UseAsync(context, transports =>
        {
            var ours = transports.Where(t => t.Name.StartsWith(PubSubTransportChoice.PollingDuplex, StringComparison.Ordinal)).ToList();
            if (!compare || ours.Count == 0)
            {
                return body(transports);
            }

            // One ruled twin for each protocol ours runs on, each on the same HTTP version as its twin.
            var list = transports.ToList();
            var ruled = new List<IPubSubTransport>();
            foreach (var twin in ours)
            {
                var transport = new RenamedTransport(
                    new DuplexPubSubTransport(context.HttpFor(twin.Protocol), new Uri(context.BaseAddress(twin.Protocol), Path), choice.Encoding, choice.Mode),
                    $"{twin.Name[..^1]}, topic rule)");
                list.Insert(list.IndexOf(twin) + 1, transport);
                ruled.Add(transport);
            }

            return RunAndDisposeAsync(ruled, () => body(list));
        });

    /// <summary>Gets the rule's name in a transport's report name, so a report can pair each ruled row with its twin.</summary>
    /// <param name="transport">A transport's report name.</param>
    /// <returns>The twin without the rule, or <see langword="null"/> when <paramref name="transport"/> has no rule.</returns>
    public static string? WithoutRule(string transport) =>
        transport.EndsWith(", topic rule)", StringComparison.Ordinal) ? transport[..^", topic rule)".Length] + ")" : null;

    private static async Task<T> RunAndDisposeAsync<T>(IReadOnlyList<IPubSubTransport> transports, Func<Task<T>> body)
    {
        try
        {
            return await body();
        }
        finally
        {
            foreach (var transport in transports)
            {
                await transport.DisposeAsync();
            }
        }
    }

    private static Option<string> CreateOption()
    {
        var option = new Option<string>("--topic-rule")
        {
            Description = "none (default): our clients on the endpoint with no topic rule; compare: also on one with a trivial rule, side by side.",
            DefaultValueFactory = _ => "none",
        };
        option.AcceptOnlyFromAmong("none", "compare");
        return option;
    }
}
