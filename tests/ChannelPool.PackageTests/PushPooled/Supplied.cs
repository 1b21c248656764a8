// What docs/polling-duplex.md's pooled-sessions snippet leaves to the reader: the client (as in "The .NET client") and
// the cancellation token.
using ChannelPool.PollingDuplex.Client;

internal static partial class Program
{
    private static readonly PollingDuplexClient client = new(new HttpClient(), new Uri("https://host/chat"));

    private static readonly CancellationToken ct = CancellationToken.None;
}
