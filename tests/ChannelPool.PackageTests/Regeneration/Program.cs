// Prints what the pooled twin of the generated client has, and shows a call going through a pooled channel to the
// address it was given. Nothing listens on 127.0.0.1:9, so the call fails there, after leaving the process.
using System.ServiceModel;
using System.ServiceModel.Description;
using ChannelPool.ServiceModel;
using ServiceReference;

var operations = typeof(PooledEchoServiceClient).GetInterfaceMap(typeof(IEchoService)).TargetMethods.Select(m => m.Name).Order(StringComparer.Ordinal);
Console.WriteLine($"regeneration: the twin has {string.Join(", ", operations)}");

var client = new PooledEchoServiceClient(EchoServiceClient.EndpointConfiguration.BasicHttpsBinding_IEchoService, "https://127.0.0.1:9/basic");
try
{
    await client.EchoAsync("hello");
    Console.WriteLine("regeneration: unexpected answer from 127.0.0.1:9");
}
catch (CommunicationException ex)
{
    Console.WriteLine($"regeneration: endpoint {client.Endpoint.Name}, ConfigureEndpoint ran {EchoServiceClient.ConfigureEndpointCalls} time(s), the call reached {client.Endpoint.Address.Uri.Authority} ({ex.GetType().Name})");
}
finally
{
    client.Abort();
    await ChannelPoolFactory<IEchoService>.DestroyAsync();
}

/// <summary>The pooled twin: the one declaration the app keeps beside Reference.cs.</summary>
[PooledClient(typeof(EchoServiceClient))]
public partial class PooledEchoServiceClient : PooledClientBase<IEchoService>;

namespace ServiceReference
{
    /// <summary>The app's ConfigureEndpoint, beside the generated client as dotnet-svcutil expects.</summary>
    public partial class EchoServiceClient
    {
        private static int s_configureEndpointCalls;

        public static int ConfigureEndpointCalls => s_configureEndpointCalls;

        static partial void ConfigureEndpoint(ServiceEndpoint serviceEndpoint, ClientCredentials clientCredentials) =>
            Interlocked.Increment(ref s_configureEndpointCalls);
    }
}
