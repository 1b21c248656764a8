using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace ChannelPool.Samples.Tls;

/// <summary>Makes the loopback server's certificate in memory: no file, nothing in any certificate store.</summary>
public static class SelfSignedCertificate
{
    /// <summary>Creates a certificate for 127.0.0.1 and localhost, valid for a day, with an ECDSA P-256 key.</summary>
    /// <returns>The certificate, with its private key.</returns>
    public static X509Certificate2 CreateForLoopback()
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest("CN=ChannelPool loopback", key, HashAlgorithmName.SHA256);
        var names = new SubjectAlternativeNameBuilder();
        names.AddIpAddress(System.Net.IPAddress.Loopback);
        names.AddDnsName("localhost");
        request.CertificateExtensions.Add(names.Build());
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature, critical: true));
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.1")], critical: false));

        var now = DateTimeOffset.UtcNow;
        using var ephemeral = request.CreateSelfSigned(now.AddMinutes(-5), now.AddDays(1));

        // A round trip through PKCS#12 bytes (in memory) gives a key SslStream can use on every platform.
        return X509CertificateLoader.LoadPkcs12(ephemeral.Export(X509ContentType.Pkcs12), password: null);
    }
}
