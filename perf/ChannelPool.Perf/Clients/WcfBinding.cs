using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using System.ServiceModel.Channels;
using System.ServiceModel.Description;
using ChannelPool.Perf.Servers;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;
using ChannelPool.Testing.ServiceModel.Soap;

namespace ChannelPool.Perf.Clients;

/// <summary>
/// One binding the proxies scenario measures, with what a client needs for it: binding, address, the pinned test
/// certificate and, on the UserName binding, alice's credentials; and which server counters belong to it.
/// </summary>
internal sealed class WcfBinding
{
    public const string NetTcp = "nettcp";
    public const string BasicHttps = "basichttps";
    public const string WsHttpUserName = "wshttp-username";
    public const string WsHttpSecureConversation = "wshttp-sct";

    /// <summary>Every binding, the original's scenario (a security context per channel) first.</summary>
    public static readonly string[] All = [WsHttpSecureConversation, NetTcp, BasicHttps, WsHttpUserName];

    private readonly WcfEndpoints _endpoints;
    private readonly X509Certificate2 _certificate;

    public WcfBinding(string name, WcfEndpoints endpoints)
    {
        Name = name;
        _endpoints = endpoints;
        _certificate = endpoints.LoadCertificate();
        (Description, Address) = name switch
        {
            NetTcp => ("net.tcp TLS", NetTcpTestHost.CreateAddress(new Uri($"net.tcp://127.0.0.1:{endpoints.NetTcpPort}/echo"))),
            BasicHttps => ("BasicHttps", SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{endpoints.SoapPort}/basic"))),
            WsHttpUserName => ("WSHttp UserName", SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{endpoints.SoapPort}/username"))),
            WsHttpSecureConversation => ("WSHttp SecureConversation", SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{endpoints.SoapPort}/sct"))),
            _ => throw new ArgumentException($"Unknown binding '{name}'; use {string.Join(", ", All)}.", nameof(name)),
        };
    }

    /// <summary>Gets the command-line name: <c>wshttp-sct</c>, <c>nettcp</c>, <c>basichttps</c> or <c>wshttp-username</c>.</summary>
    public string Name { get; }

    /// <summary>
    /// Gets what the report calls it (WSHttp UserName: WSHttpBinding with TransportWithMessageCredential and a UserName
    /// credential; WSHttp SecureConversation: the same with EstablishSecurityContext, so every channel open negotiates a
    /// security context token, the original's scenario).
    /// </summary>
    public string Description { get; }

    public EndpointAddress Address { get; }

    /// <summary>Gets whether every channel open is a connection of its own (net.tcp), rather than sharing the factory's HTTP connections.</summary>
    public bool IsSessionful => Name == NetTcp;

    /// <summary>Creates a new binding object, as an app that builds its proxy from code would.</summary>
    public Binding CreateBinding() => Name switch
    {
        NetTcp => NetTcpTestHost.CreateBinding(),
        BasicHttps => SoapTestHost.CreateBasicBinding(),
        WsHttpSecureConversation => SoapTestHost.CreateSecureConversationBinding(),
        _ => SoapTestHost.CreateUserNameBinding(),
    };

    /// <summary>Trusts the test certificate and, on the UserName bindings, signs in as alice.</summary>
    public void Configure(ClientCredentials credentials)
    {
        TestCertificate.TrustOnly(credentials, _certificate);
        if (Name is WsHttpUserName or WsHttpSecureConversation)
        {
            credentials.UserName.UserName = TestUsers.Alice;
            credentials.UserName.Password = TestUsers.AlicePassword;
        }
    }

    /// <summary>Picks this binding's host's counters out of the server's.</summary>
    public ServerCountsSnapshot CountersOf(ServerStats stats) => IsSessionful ? stats.NetTcp : stats.Soap;
}
