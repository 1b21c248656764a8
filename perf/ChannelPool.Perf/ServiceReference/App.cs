using System.Security.Cryptography.X509Certificates;
using System.ServiceModel.Description;
using ChannelPool.ServiceModel;
using ChannelPool.Testing;

namespace ServiceReference;

/// <summary>
/// The app's half of the generated client, beside the tool's unchanged <c>Reference.cs</c> (the generator tests' dotnet-svcutil fixture, linked): the <c>ConfigureEndpoint</c>
/// partial method, which trusts the embedded server's in-memory certificate as an app sets its credentials there.
/// </summary>
public partial class EchoServiceClient
{
    /// <summary>Gets or sets the certificate the embedded server presents; the only one trusted.</summary>
    internal static X509Certificate2? TrustedCertificate { get; set; }

    static partial void ConfigureEndpoint(ServiceEndpoint serviceEndpoint, ClientCredentials clientCredentials)
    {
        if (TrustedCertificate is { } certificate)
        {
            TestCertificate.TrustOnly(clientCredentials, certificate);
        }
    }
}

/// <summary>The pooled twin of the generated client: the one line an app adds; the generator writes the rest.</summary>
[PooledClient(typeof(EchoServiceClient))]
public partial class PooledEchoServiceClient : PooledClientBase<IEchoService>;
