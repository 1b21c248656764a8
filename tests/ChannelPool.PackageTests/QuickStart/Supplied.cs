// What the README's quick start leaves to the reader: the request and the cancellation token (MyChannel.cs: the channel).

internal static partial class Program
{
    private static readonly ReadOnlyMemory<byte> request = "ping"u8.ToArray();

    private static readonly CancellationToken cancellationToken = CancellationToken.None;
}
