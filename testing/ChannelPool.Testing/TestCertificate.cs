using System.IdentityModel.Selectors;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel.Description;
using System.ServiceModel.Security;

namespace ChannelPool.Testing;

/// <summary>
/// The test servers' certificates, generated in memory (no file, nothing in a certificate store), and the WCF client
/// setting that trusts exactly one of them and no other.
/// </summary>
public static class TestCertificate
{
    /// <summary>The DNS name in every test certificate; WCF clients use it as the endpoint identity.</summary>
    public const string DnsName = "localhost";

    /// <summary>
    /// Creates a certificate for 127.0.0.1 and localhost, valid for a day, with an RSA 2048 key, as a typical service
    /// certificate has: what the WCF test hosts present, so their handshakes cost what a real service's do.
    /// </summary>
    /// <returns>The certificate, with its private key.</returns>
    public static X509Certificate2 Create()
    {
        using var key = RSA.Create(2048);
        var request = new CertificateRequest($"CN={DnsName}", key, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);

        // KeyEncipherment too: TLS 1.2's RSA key exchange needs it.
        return SelfSign(request, X509KeyUsageFlags.DigitalSignature | X509KeyUsageFlags.KeyEncipherment);
    }

    /// <summary>
    /// Creates a certificate for 127.0.0.1 and localhost, valid for a day, with an ECDSA P-256 key: made in about a
    /// millisecond, so a test can make one per server it starts.
    /// </summary>
    /// <returns>The certificate, with its private key.</returns>
    public static X509Certificate2 CreateEcdsa()
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        return SelfSign(new CertificateRequest($"CN={DnsName}", key, HashAlgorithmName.SHA256), X509KeyUsageFlags.DigitalSignature);
    }

    /// <summary>
    /// Makes a WCF client trust <paramref name="certificate"/> and nothing else for TLS. The library never turns
    /// validation off; tests trust the certificate they generated.
    /// </summary>
    /// <param name="credentials">The client credentials of a channel factory or proxy.</param>
    /// <param name="certificate">The test service's certificate.</param>
    public static void TrustOnly(ClientCredentials credentials, X509Certificate2 certificate) => TrustOnly(credentials, [certificate]);

    /// <summary>
    /// Makes a WCF client trust exactly <paramref name="certificates"/> for TLS, as a client does across a service's
    /// certificate rotation, when it trusts the old certificate and the new one.
    /// </summary>
    /// <param name="credentials">The client credentials of a channel factory or proxy.</param>
    /// <param name="certificates">The test service's certificates.</param>
    public static void TrustOnly(ClientCredentials credentials, IReadOnlyCollection<X509Certificate2> certificates)
    {
        ArgumentNullException.ThrowIfNull(credentials);
        ArgumentNullException.ThrowIfNull(certificates);
        credentials.ServiceCertificate.SslCertificateAuthentication = new X509ServiceCertificateAuthentication
        {
            CertificateValidationMode = X509CertificateValidationMode.Custom,
            CustomCertificateValidator = new PinnedCertificateValidator(certificates),
            RevocationMode = X509RevocationMode.NoCheck,
        };
    }

    private static X509Certificate2 SelfSign(CertificateRequest request, X509KeyUsageFlags usage)
    {
        var names = new SubjectAlternativeNameBuilder();
        names.AddIpAddress(System.Net.IPAddress.Loopback);
        names.AddDnsName(DnsName);
        request.CertificateExtensions.Add(names.Build());
        request.CertificateExtensions.Add(new X509KeyUsageExtension(usage, critical: true));
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.1")], critical: false));

        var now = DateTimeOffset.UtcNow;
        using var ephemeral = request.CreateSelfSigned(now.AddMinutes(-5), now.AddDays(1));

        // A round trip through PKCS#12 bytes (in memory) gives a key SslStream can use on every platform.
        return X509CertificateLoader.LoadPkcs12(ephemeral.Export(X509ContentType.Pkcs12), password: null);
    }

    private sealed class PinnedCertificateValidator(IReadOnlyCollection<X509Certificate2> trusted) : X509CertificateValidator
    {
        public override void Validate(X509Certificate2 certificate)
        {
            ArgumentNullException.ThrowIfNull(certificate);
            if (!trusted.Any(t => certificate.RawDataMemory.Span.SequenceEqual(t.RawDataMemory.Span)))
            {
                throw new System.IdentityModel.Tokens.SecurityTokenValidationException(
                    $"The server's certificate {certificate.Thumbprint} is not a test certificate this client trusts ({string.Join(", ", trusted.Select(t => t.Thumbprint))}).");
            }
        }
    }
}
