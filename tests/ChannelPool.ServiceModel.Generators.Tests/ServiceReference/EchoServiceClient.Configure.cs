using System.Security.Cryptography.X509Certificates;
using System.ServiceModel.Description;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;

namespace ServiceReference;

/// <summary>
/// The application's half of the generated client, where dotnet-svcutil expects it: the <c>ConfigureEndpoint</c>
/// partial method. Here it trusts the test service's in-memory certificate, as an application's would set its
/// credentials, and counts its calls so the tests can see where it ran.
/// </summary>
public partial class EchoServiceClient
{
    private static int _configureEndpointCalls;

    /// <summary>Gets or sets the certificate the running test service presents; the only one trusted.</summary>
    public static X509Certificate2? TrustedCertificate { get; set; }

    /// <summary>Gets how often <c>ConfigureEndpoint</c> ran.</summary>
    public static int ConfigureEndpointCalls => Volatile.Read(ref _configureEndpointCalls);

    public static void ResetConfigureEndpointCalls() => Volatile.Write(ref _configureEndpointCalls, 0);

    static partial void ConfigureEndpoint(ServiceEndpoint serviceEndpoint, ClientCredentials clientCredentials)
    {
        Interlocked.Increment(ref _configureEndpointCalls);
        if (TrustedCertificate is { } certificate)
        {
            TestCertificate.TrustOnly(clientCredentials, certificate);
        }
    }
}
