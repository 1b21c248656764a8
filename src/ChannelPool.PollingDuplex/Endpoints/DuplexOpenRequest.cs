namespace ChannelPool.PollingDuplex;

/// <summary>What an open asks for: the encoding, the mode, and the client's id for this open, if it sent one.</summary>
/// <param name="Encoding">The encoding asked for.</param>
/// <param name="Mode">The mode asked for.</param>
/// <param name="OpenId">
/// The client's random id for this logical open, reused by its retries: a repeated open with it gets the answer the first
/// got, so a retried open never leaves a second session behind. Null when the client sent none.
/// </param>
internal sealed record DuplexOpenRequest(DuplexEncoding Encoding, PollingDuplexMode Mode, string? OpenId)
{
    public const int MinOpenIdLength = 16;

    public const int MaxOpenIdLength = 64;

    private static readonly System.Buffers.SearchValues<char> OpenIdChars =
        System.Buffers.SearchValues.Create("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");

    /// <summary>Whether <paramref name="openId"/> is 16 to 64 characters of <c>A-Z a-z 0-9 _ -</c>.</summary>
    public static bool IsOpenId(string? openId) =>
        openId is { Length: >= MinOpenIdLength and <= MaxOpenIdLength } && !openId.AsSpan().ContainsAnyExcept(OpenIdChars);
}
