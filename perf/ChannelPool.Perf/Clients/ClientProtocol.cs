using System.Net;

namespace ChannelPool.Perf.Clients;

/// <summary>
/// The HTTP version simulated clients speak to the perf server. HTTP/1.1 holds one connection (a file descriptor in each
/// process) per outstanding long poll; HTTP/2 is cleartext with prior knowledge (h2c) on the server's second loopback
/// port, where up to Kestrel's <c>MaxStreamsPerConnection</c> polls share one connection.
/// </summary>
internal enum ClientProtocol
{
    /// <summary>HTTP/1.1 on the server's first port.</summary>
    Http11,

    /// <summary>HTTP/2 without TLS, prior knowledge, on the server's second port.</summary>
    Http2,
}

/// <summary>How each <see cref="ClientProtocol"/> is named on the command line and in reports.</summary>
internal static class ClientProtocols
{
    /// <summary>Gets the values <c>--http</c> takes, in the order they are listed.</summary>
    public static IReadOnlyList<string> OptionValues { get; } = ["1.1", "2"];

    /// <summary>Gets the name a report shows, <c>HTTP/1.1</c> or <c>HTTP/2</c>.</summary>
    public static string Label(this ClientProtocol protocol) => protocol == ClientProtocol.Http2 ? "HTTP/2" : "HTTP/1.1";

    /// <summary>Gets the request version for <paramref name="protocol"/>.</summary>
    /// <returns><see cref="HttpVersion.Version11"/> or <see cref="HttpVersion.Version20"/>.</returns>
    public static Version RequestVersion(this ClientProtocol protocol) => protocol == ClientProtocol.Http2 ? HttpVersion.Version20 : HttpVersion.Version11;

    /// <summary>Reads an <c>--http</c> value.</summary>
    /// <param name="value"><c>1.1</c> or <c>2</c>.</param>
    /// <returns>The protocol, or <see langword="null"/> for anything else.</returns>
    public static ClientProtocol? Parse(string value) => value switch
    {
        "1.1" => ClientProtocol.Http11,
        "2" => ClientProtocol.Http2,
        _ => null,
    };
}
