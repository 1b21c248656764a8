// What docs/polling-duplex.md's .NET client snippet leaves to the reader: the HttpClient and the cancellation token.

internal static partial class Program
{
    private static readonly HttpClient httpClient = new();

    private static readonly CancellationToken ct = CancellationToken.None;
}
