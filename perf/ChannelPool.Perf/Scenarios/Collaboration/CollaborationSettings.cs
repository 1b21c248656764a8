using ChannelPool.Perf.Stats;

namespace ChannelPool.Perf.Scenarios.Collaboration;

/// <summary>One row of the collaboration table: T topics × N clients, publishing every D.</summary>
/// <param name="Topics">T, the number of topics (chat rooms).</param>
/// <param name="ClientsPerTopic">N, the clients subscribed to each topic.</param>
/// <param name="Delay">D, the quiet time after every client of a topic has a message, before the next publish.</param>
/// <param name="Original">The original's published figures for this row, if it is one of its seven.</param>
internal sealed record CollaborationRow(int Topics, int ClientsPerTopic, TimeSpan Delay, OriginalCollaboration? Original = null)
{
    public int Clients => Topics * ClientsPerTopic;

    public string Label => $"{Topics}×{ClientsPerTopic}, D={Delay.TotalSeconds:0.##}s";

    /// <summary>The original's seven rows (seed 002), with its mean, median and stdev in ms.</summary>
    public static IReadOnlyList<CollaborationRow> Original7 { get; } =
    [
        new(100, 5, TimeSpan.FromSeconds(1), new(91, 63, 122)),
        new(500, 2, TimeSpan.FromSeconds(15), new(4, 0, 12)),
        new(500, 3, TimeSpan.FromSeconds(15), new(108, 94, 73)),
        new(800, 3, TimeSpan.FromSeconds(15), new(2743, 1328, 3195)),
        new(1000, 2, TimeSpan.FromSeconds(5), new(496, 498, 288)),
        new(1000, 2, TimeSpan.FromSeconds(15), new(6, 0, 17)),
        new(2000, 2, TimeSpan.FromSeconds(15), new(25, 0, 99)),
    ];

    /// <summary>Rows beyond the original's, sized to push a 2-core machine: more clients, and more talk.</summary>
    public static IReadOnlyList<CollaborationRow> Stretch { get; } =
    [
        new(2000, 5, TimeSpan.FromSeconds(1)),
        new(5000, 2, TimeSpan.FromSeconds(1)),
        new(4000, 3, TimeSpan.FromSeconds(1)),
    ];
}

/// <summary>The original's published latency for one row, in ms.</summary>
internal sealed record OriginalCollaboration(double MeanMs, double MedianMs, double StdevMs);

/// <summary>The collaboration script's settings.</summary>
internal sealed record CollaborationSettings
{
    public IReadOnlyList<CollaborationRow> Rows { get; init; } = [.. CollaborationRow.Original7, .. CollaborationRow.Stretch];

    /// <summary>The publishes a row needs before its p99 is judged: with fewer, the p99 rests on a handful of slow ones.</summary>
    public const int P99Publishes = 1000;

    /// <summary>Gets how many times each topic publishes (the original: at least 100).</summary>
    public int Iterations { get; init; } = 100;

    /// <summary>
    /// Gets whether a row with few topics publishes more often than <see cref="Iterations"/>, until it has
    /// <see cref="P99Publishes"/> publishes. A publish, not a receipt, is the sample: one publish's receipts arrive together.
    /// </summary>
    public bool EnoughForP99 { get; init; }

    /// <summary>Gets how many times each topic of <paramref name="row"/> publishes.</summary>
    public int IterationsFor(CollaborationRow row) =>
        EnoughForP99 ? Math.Max(Iterations, (P99Publishes + row.Topics - 1) / row.Topics) : Iterations;

    /// <summary>
    /// Gets how many iterations every topic runs before the clock, unrecorded, followed by a full collection in both
    /// processes: each transport starts its row warm and without the connects' garbage to collect.
    /// </summary>
    public int WarmupIterations { get; init; } = 2;

    /// <summary>The longest quiet time between warm-up iterations: they warm code and sessions, which takes no waiting.</summary>
    public static readonly TimeSpan WarmupDelayCap = TimeSpan.FromSeconds(0.1);

    /// <summary>Gets a factor applied to every D, to shorten a run; 1 runs the original's delays.</summary>
    public double DelayScale { get; init; } = 1.0;

    public int ConnectConcurrency { get; init; } = 64;

    /// <summary>
    /// Gets whether the topics publish out of step (spread: topic t starts t/T of D late, as independent clients would)
    /// or all at the same instant (aligned: a synchronised burst of T publishes every iteration, the worst case).
    /// </summary>
    public CollaborationPhase Phase { get; init; } = CollaborationPhase.Spread;

    /// <summary>Gets which transports run each row, one after the other.</summary>
    public PubSubTransportChoice Transports { get; init; } = PubSubTransportChoice.Ours;

    /// <summary>Gets whether our clients also run against the endpoint with a trivial topic rule (<c>TopicRuleEndpoint</c>).</summary>
    public bool CompareTopicRule { get; init; }
}

/// <summary>How the topics' publishes line up in time.</summary>
internal enum CollaborationPhase
{
    /// <summary>Topic t starts t/T of D late, so publishes are spread evenly over D.</summary>
    Spread,

    /// <summary>Every topic publishes at the same instant.</summary>
    Aligned,
}

/// <summary>One row's measurement.</summary>
internal sealed record CollaborationResult(
    string Transport, CollaborationRow Row, int Iterations, double DelaySeconds, LatencySummary Latency, long Expected, long Lost, long Duplicates, string? Limit);
