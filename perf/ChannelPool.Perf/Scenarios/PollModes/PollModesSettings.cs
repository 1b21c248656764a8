namespace ChannelPool.Perf.Scenarios.PollModes;

/// <summary>The poll-modes settings.</summary>
internal sealed record PollModesSettings
{
    /// <summary>Gets how long each cell is measured, after its warm-up.</summary>
    public TimeSpan Duration { get; init; } = TimeSpan.FromSeconds(5);

    public TimeSpan WarmUp { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>Gets how many streams run side by side in each cell (sessions or sockets), to use every core.</summary>
    public int Streams { get; init; } = 4;

    /// <summary>Gets each message's size in bytes.</summary>
    public int MessageSize { get; init; } = 256;

    /// <summary>
    /// Gets how many times every cell is measured, in turn, after one unrecorded warm-up pass over all of them; each cell
    /// reports its median round. Interleaving rounds spreads the noise of a shared machine over every cell alike.
    /// </summary>
    public int Rounds { get; init; } = 3;
}

/// <summary>One cell: a way of pushing messages, in one encoding.</summary>
/// <param name="Transport">The way of pushing.</param>
/// <param name="Encoding">binary or text.</param>
/// <param name="Streams">Streams side by side.</param>
/// <param name="MessageSize">Bytes per message.</param>
/// <param name="Seconds">The median round's measured time.</param>
/// <param name="Messages">The median round's message count.</param>
/// <param name="MessagesPerSecond">The median round's rate.</param>
/// <param name="MegabytesPerSecond">The median round's payload rate.</param>
/// <param name="RoundMessagesPerSecond">Every round's rate, in the order run.</param>
internal sealed record PollModesResult(
    string Transport, string Encoding, int Streams, int MessageSize, double Seconds, long Messages, double MessagesPerSecond, double MegabytesPerSecond, IReadOnlyList<double> RoundMessagesPerSecond);
