// The channel type the README's quick start leaves to the reader. It lives in memory, so the snippet runs without a server.

#pragma warning disable CA1515 // The README's own types are public; these stand beside them.

public sealed class MyChannel
{
    private static int s_opened;

    public int Id { get; } = Interlocked.Increment(ref s_opened);

    public bool IsFaulted { get; private set; }

    public static ValueTask<MyChannel> ConnectAsync(CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        return ValueTask.FromResult(new MyChannel());
    }

    public ValueTask SendAsync(ReadOnlyMemory<byte> request, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        // tests/package-smoke.sh looks for this line to know that the snippet ran to the call.
        Console.WriteLine($"quick start: sent {request.Length} bytes on pooled channel #{Id}");
        return ValueTask.CompletedTask;
    }

    public ValueTask CloseAsync(CancellationToken cancellationToken) => ValueTask.CompletedTask;

    public void Abort() => IsFaulted = true;
}
