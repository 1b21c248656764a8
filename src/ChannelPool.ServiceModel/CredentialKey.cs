using System.IdentityModel.Selectors;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel.Description;
using System.ServiceModel.Security;
using System.Text;

namespace ChannelPool.ServiceModel;

/// <summary>
/// What makes two sets of client credentials open different channels: the user name, the password, the client
/// certificate, and how the service's certificate is checked. Proxies whose keys differ never share a channel.
/// </summary>
/// <remarks>
/// The password enters only as an HMAC under a key made fresh for each process, so the key cannot be reversed or
/// looked up in a table, and <see cref="ToString"/> (used for pool names, logs and metric tags) leaves it out.
/// </remarks>
internal readonly record struct CredentialKey(
    string? UserName,
    string? PasswordDigest,
    string? ClientCertificateHash,
    (X509CertificateValidationMode Mode, X509RevocationMode Revocation, StoreLocation Store)? ServiceCertificateCheck,
    X509CertificateValidator? ServiceCertificateValidator)
{
    private static readonly byte[] ProcessSecret = RandomNumberGenerator.GetBytes(32);

    public static CredentialKey From(ClientCredentials credentials)
    {
        var password = credentials.UserName.Password;
        var digest = password is null
            ? null
            : Convert.ToBase64String(HMACSHA256.HashData(ProcessSecret, Encoding.UTF8.GetBytes(password)));
        var certificate = credentials.ClientCertificate.Certificate?.GetCertHashString(HashAlgorithmName.SHA256);

        // The validator compares by identity, since two validators may trust different certificates. A cloned
        // ClientCredentials shares its validator with the original, so proxies cloned from one template share a key.
        var ssl = credentials.ServiceCertificate.SslCertificateAuthentication;
        return new CredentialKey(
            credentials.UserName.UserName,
            digest,
            certificate,
            ssl is null ? null : (ssl.CertificateValidationMode, ssl.RevocationMode, ssl.TrustedStoreLocation),
            ssl?.CustomCertificateValidator);
    }

    /// <summary>Describes the credentials without anything secret: for pool names, logs and metric tags.</summary>
    /// <returns>For example <c>alice</c>, <c>cert:3F2A19C0</c> or <c>anonymous</c>.</returns>
    public override string ToString() =>
        UserName is { Length: > 0 } ? UserName
        : ClientCertificateHash is not null ? $"cert:{ClientCertificateHash[..8]}"
        : "anonymous";
}
