using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;

namespace ChannelPool.Testing.Tls;

/// <summary>Test infrastructure, not product: opens <see cref="TlsChannel"/>s to one server, trusting exactly the certificate it was given.</summary>
public sealed class TlsChannelFactory : IPooledChannelFactory<TlsChannel>
{
    private readonly IPEndPoint _server;
    private readonly RemoteCertificateValidationCallback _validate;

    /// <summary>Creates a factory for a server whose self-signed certificate is pinned: it is trusted, and nothing else is.</summary>
    /// <param name="server">Where to connect.</param>
    /// <param name="trustedCertificate">The one certificate the server may present.</param>
    public TlsChannelFactory(IPEndPoint server, X509Certificate2 trustedCertificate)
    {
        ArgumentNullException.ThrowIfNull(server);
        ArgumentNullException.ThrowIfNull(trustedCertificate);
        _server = server;
        var pinned = trustedCertificate.RawData;
        _validate = (_, presented, _, _) => presented is not null && presented.GetRawCertData().AsSpan().SequenceEqual(pinned);
    }

    /// <inheritdoc />
    public async ValueTask<TlsChannel> OpenAsync(CancellationToken cancellationToken)
    {
        var client = new TcpClient(_server.AddressFamily) { NoDelay = true };
        try
        {
            await client.Client.ConnectAsync(_server, cancellationToken);
            var tls = new SslStream(client.GetStream(), leaveInnerStreamOpen: false);
            await tls.AuthenticateAsClientAsync(
                new SslClientAuthenticationOptions
                {
                    TargetHost = TestCertificate.DnsName,
                    RemoteCertificateValidationCallback = _validate,
                },
                cancellationToken);
            var channel = new TlsChannel(client, tls);

            // One round trip completes the open. It proves the channel works end to end, and it reads past the
            // records TLS 1.3 sends after its handshake (session tickets), which would otherwise sit unread and make
            // a connection the server has closed look alive to IsUsable.
            await channel.EchoAsync("open", cancellationToken);
            return channel;
        }
        catch
        {
            client.Dispose();
            throw;
        }
    }

    /// <inheritdoc />
    public bool IsUsable(TlsChannel channel) => channel.IsUsable;

    /// <inheritdoc />
    public ValueTask CloseAsync(TlsChannel channel, CancellationToken cancellationToken) =>
        new(channel.CloseAsync(cancellationToken));

    /// <inheritdoc />
    public void Abort(TlsChannel channel) => channel.Dispose();
}
