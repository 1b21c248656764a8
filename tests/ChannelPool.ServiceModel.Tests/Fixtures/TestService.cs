using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using System.ServiceModel.Channels;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;
using ChannelPool.Testing.ServiceModel.SecureConversation;
using ChannelPool.Testing.ServiceModel.Soap;

namespace ChannelPool.ServiceModel.Tests.Fixtures;

/// <summary>The bindings the WCF drop-in is tested on, each against a real service on 127.0.0.1.</summary>
public enum Transport
{
    /// <summary>net.tcp with TLS, against the [MC-NMF] test host: every channel open is a TCP connect and a TLS handshake.</summary>
    NetTcp,

    /// <summary>BasicHttpsBinding against SoapCore on Kestrel.</summary>
    BasicHttps,

    /// <summary>WSHttpBinding with transport security (SOAP 1.2, WS-Addressing) against SoapCore.</summary>
    WsHttps,

    /// <summary>WSHttpBinding with TransportWithMessageCredential and UserName credentials against SoapCore.</summary>
    UserName,

    /// <summary>
    /// The original's scenario: WSHttpBinding with TransportWithMessageCredential, UserName credentials and a security
    /// context (EstablishSecurityContext), against the test host's WS-SecureConversation endpoint. Every channel open
    /// negotiates a token; every call is signed with its key.
    /// </summary>
    SecureConversation,
}

/// <summary>
/// One running test service for a <see cref="Transport"/>, with the binding, address and client set-up a proxy needs.
/// It can be stopped and started again on the same port, keeping its counters.
/// </summary>
internal sealed class TestService : IAsyncDisposable
{
    private NetTcpTestHost? _netTcp;
    private SoapTestHost? _soap;

    private readonly SecureConversationOptions? _secureConversation;

    private TestService(Transport transport, X509Certificate2 certificate, SecureConversationOptions? secureConversation)
    {
        _secureConversation = secureConversation;
        Transport = transport;
        Certificate = certificate;
    }

    public Transport Transport { get; }

    public X509Certificate2 Certificate { get; }

    public ServerCounters Counters { get; } = new();

    public int Port { get; private set; }

    public SoapTestHost SoapHost => _soap ?? throw new InvalidOperationException("Not a running SOAP service.");

    public NetTcpTestHost NetTcpHost => _netTcp ?? throw new InvalidOperationException("Not a running net.tcp service.");

    public Binding Binding => Transport switch
    {
        Transport.NetTcp => NetTcpTestHost.CreateBinding(),
        Transport.BasicHttps => SoapTestHost.CreateBasicBinding(),
        Transport.WsHttps => SoapTestHost.CreateWsBinding(),
        Transport.SecureConversation => SoapTestHost.CreateSecureConversationBinding(),
        _ => SoapTestHost.CreateUserNameBinding(),
    };

    public EndpointAddress EchoAddress => Transport switch
    {
        Transport.NetTcp => NetTcpTestHost.CreateAddress(new Uri($"net.tcp://127.0.0.1:{Port}/echo")),
        Transport.BasicHttps => SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{Port}/basic")),
        Transport.WsHttps => SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{Port}/ws")),
        Transport.SecureConversation => SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{Port}/sct")),
        _ => SoapTestHost.CreateAddress(new Uri($"https://127.0.0.1:{Port}/username")),
    };

    public EndpointAddress CounterAddress => NetTcpTestHost.CreateAddress(new Uri($"net.tcp://127.0.0.1:{Port}/counter"));

    /// <summary>The user a channel factory signs in as on <see cref="Transport.UserName"/>; "anonymous" elsewhere.</summary>
    public string ExpectedUser => SignsIn ? TestUsers.Alice : "anonymous";

    private bool SignsIn => Transport is Transport.UserName or Transport.SecureConversation;

    public static async Task<TestService> StartAsync(Transport transport, X509Certificate2? certificate = null, SecureConversationOptions? secureConversation = null)
    {
        var service = new TestService(transport, certificate ?? TestCertificate.Create(), secureConversation);
        await service.StartAsync();
        return service;
    }

    /// <summary>Trusts the service's certificate, and on <see cref="Transport.UserName"/> signs in as alice.</summary>
    public void Configure<TContract>(ChannelFactory<TContract> factory)
    {
        TestCertificate.TrustOnly(factory.Credentials, Certificate);
        if (SignsIn)
        {
            factory.Credentials.UserName.UserName = TestUsers.Alice;
            factory.Credentials.UserName.Password = TestUsers.AlicePassword;
        }
    }

    public async Task StartAsync()
    {
        if (Transport == Transport.NetTcp)
        {
            _netTcp = await NetTcpTestHost.StartAsync(Certificate, Port, Counters);
            Port = _netTcp.Port;
        }
        else
        {
            _soap = await SoapTestHost.StartAsync(Certificate, Port, Counters, _secureConversation);
            Port = _soap.Port;
        }
    }

    public async Task StopAsync()
    {
        if (_netTcp is not null)
        {
            await _netTcp.StopAsync();
            _netTcp = null;
        }

        if (_soap is not null)
        {
            await _soap.StopAsync();
            _soap = null;
        }
    }

    public ValueTask DisposeAsync() => new(StopAsync());
}
