using System.Text;

namespace ChannelPool.Perf.Servers;

/// <summary>The message the poll-modes flood sends, identical for every transport: a JSON object of a given size.</summary>
internal static class FloodPayload
{
    public const int MinSize = 16;
    public const int MaxSize = 60 * 1024;

    /// <summary>Builds <c>{"flood":"xxx…"}</c> padded to exactly <paramref name="size"/> bytes.</summary>
    public static byte[] Create(int size)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(size, MinSize);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(size, MaxSize);
        const string Head = "{\"flood\":\"";
        const string Tail = "\"}";
        return Encoding.UTF8.GetBytes(Head + new string('x', size - Head.Length - Tail.Length) + Tail);
    }
}
