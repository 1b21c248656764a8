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
/// One binding the proxies scenario measures, against one service setting, with what a client needs for it: binding,
/// address, the pinned test certificate and, on the UserName bindings, alice's credentials; and which server counters
/// belong to it.
/// </summary>
internal sealed class WcfBinding
{
    public const string NetTcp = "nettcp";
    public const string BasicHttps = "basichttps";
    public const string WsHttpUserName = "wshttp-username";
    public const string WsHttpSecureConversation = "wshttp-sct";

    /// <summary>Every binding, the original's scenario (a security context per channel) first.</summary>
    public static readonly string[] All = [WsHttpSecureConversation, NetTcp, BasicHttps, WsHttpUserName];

    /// <summary>What the report calls a sessionless binding's service setting: it serves every call at once either way.</summary>
    public const string NoSession = "no session";

    private readonly X509Certificate2 _certificate;

    /// <param name="name">The binding's command-line name.</param>
    /// <param name="concurrency">How the service serves a session's calls; a binding without sessions ignores it.</param>
    /// <param name="endpoints">Where the test services listen.</param>
    public WcfBinding(string name, ServiceConcurrency concurrency, WcfEndpoints endpoints)
    {
        Name = name;
        HasSession = HasSessions(name);
        Concurrency = HasSession ? concurrency : null;
        _certificate = endpoints.LoadCertificate();
        (int netTcpPort, int soapPort) = endpoints.Ports(concurrency);
        (Description, Address) = name switch
        {
            NetTcp => ("net.tcp TLS", NetTcpTestHost.CreateAddress(new Uri($"net.tcp://127.0.0.1:{netTcpPort}/echo"))),
            BasicHttps => ("BasicHttps", SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{soapPort}/basic"))),
            WsHttpUserName => ("WSHttp UserName", SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{soapPort}/username"))),
            WsHttpSecureConversation => ("WSHttp SecureConversation", SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{soapPort}/sct"))),
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

    /// <summary>Gets whether a channel is a session at the service (net.tcp; WSHttp with a security context), so the service's concurrency applies.</summary>
    public bool HasSession { get; }

    /// <summary>Gets how the service serves one session's calls, or <see langword="null"/> for a binding without sessions.</summary>
    public ServiceConcurrency? Concurrency { get; }

    /// <summary>Gets what the report calls the service setting: <see cref="ServiceLabel"/>, or <see cref="NoSession"/>.</summary>
    public string Service => Concurrency is { } concurrency ? ServiceLabel(concurrency) : NoSession;

    /// <summary>Gets whether every channel open is a connection of its own (net.tcp), rather than sharing the factory's HTTP connections.</summary>
    public bool IsNetTcp => Name == NetTcp;

    /// <summary>Whether the binding's channels are sessions at the service, so that it runs against both service settings.</summary>
    public static bool HasSessions(string name) => name is NetTcp or WsHttpSecureConversation;

    /// <summary>What the report calls a service setting.</summary>
    public static string ServiceLabel(ServiceConcurrency concurrency) => concurrency switch
    {
        ServiceConcurrency.Single => "one at a time (Single)",
        _ => "concurrent (Multiple)",
    };

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
    public ServerCountsSnapshot CountersOf(ServerStats stats) => IsNetTcp ? stats.NetTcp : stats.Soap;
}
