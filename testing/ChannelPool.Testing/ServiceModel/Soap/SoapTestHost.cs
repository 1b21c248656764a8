using System.Net;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using System.ServiceModel.Channels;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using SoapCore;
using SoapCore.Extensibility;
using ChannelPool.Testing.ServiceModel.SecureConversation;
using Microsoft.AspNetCore.Http;

namespace ChannelPool.Testing.ServiceModel.Soap;

/// <summary>
/// Test infrastructure, not product: SoapCore on an in-process Kestrel, HTTPS on 127.0.0.1 with the in-memory test
/// certificate and HTTP/1.1 only, serving <see cref="IEchoService"/> on three endpoints: <c>/basic</c> (SOAP 1.1, for
/// <see cref="BasicHttpsBinding"/>), <c>/ws</c> (SOAP 1.2 with WS-Addressing, for <see cref="WSHttpBinding"/> with
/// transport security) and <c>/username</c> (the same, plus a WS-Security UsernameToken checked against
/// <see cref="TestUsers"/>). It counts TCP connections, TLS handshakes and calls; HTTP has no sessions, so these three
/// serve every request at once, as WCF serves a sessionless endpoint. A fourth endpoint, <c>/sct</c>, has security
/// sessions (<see cref="SecureConversationEndpoint"/>), served one call at a time or at once as
/// <see cref="SecureConversationOptions.Concurrency"/> says.
/// </summary>
public sealed class SoapTestHost : IAsyncDisposable
{
    private const string BasicPath = "/basic";
    private const string WsPath = "/ws";
    private const string UserNamePath = "/username";
    private const string SecureConversationPath = "/sct";

    private readonly WebApplication _app;
    private readonly SecurityContextStore _tokens;
    private int _stopped;

    private SoapTestHost(WebApplication app, int port, ServerCounters counters, SecurityContextStore tokens)
    {
        _tokens = tokens;
        _app = app;
        Port = port;
        Counters = counters;
        BasicAddress = new Uri($"https://127.0.0.1:{port}{BasicPath}");
        WsAddress = new Uri($"https://127.0.0.1:{port}{WsPath}");
        UserNameAddress = new Uri($"https://127.0.0.1:{port}{UserNamePath}");
        SecureConversationAddress = new Uri($"https://127.0.0.1:{port}{SecureConversationPath}");
    }

    /// <summary>Gets the port the host listens on.</summary>
    public int Port { get; }

    /// <summary>Gets the SOAP 1.1 endpoint for <see cref="CreateBasicBinding"/>: <c>https://127.0.0.1:{port}/basic</c>.</summary>
    public Uri BasicAddress { get; }

    /// <summary>Gets the SOAP 1.2 WS-Addressing endpoint for <see cref="CreateWsBinding"/>: <c>https://127.0.0.1:{port}/ws</c>.</summary>
    public Uri WsAddress { get; }

    /// <summary>
    /// Gets the UserName endpoint for <see cref="CreateUserNameBinding"/>: <c>https://127.0.0.1:{port}/username</c>.
    /// <see cref="IEchoService.WhoAmI"/> returns the authenticated user here, and "anonymous" on the other endpoints.
    /// </summary>
    public Uri UserNameAddress { get; }

    /// <summary>
    /// Gets the WS-SecureConversation endpoint for <see cref="CreateSecureConversationBinding"/>:
    /// <c>https://127.0.0.1:{port}/sct</c>, served by <see cref="SecureConversationEndpoint"/>.
    /// </summary>
    public Uri SecureConversationAddress { get; }

    /// <summary>Gets the number of security context tokens the <c>/sct</c> endpoint has issued and still accepts (not cancelled, not found expired).</summary>
    public int SecurityContextTokens => _tokens.Count;

    /// <summary>Gets what the host counts; the same instance that was passed to <see cref="StartAsync"/>, if one was.</summary>
    public ServerCounters Counters { get; }

    /// <summary>Starts Kestrel in process, listening on 127.0.0.1 over HTTPS.</summary>
    /// <param name="certificate">The TLS server certificate, for example from <see cref="TestCertificate.Create"/>.</param>
    /// <param name="port">The port, or 0 for a free one. A stopped host's port can be used again.</param>
    /// <param name="counters">Counters to keep adding to, so counts survive a restart; <see langword="null"/> for new ones.</param>
    /// <param name="secureConversation">
    /// Token lifetime, inactivity timeout, clock and session concurrency of the <c>/sct</c> endpoint; <see langword="null"/>
    /// for WCF's defaults, but for the concurrency, which is <see cref="ServiceConcurrency.Multiple"/> unless set.
    /// </param>
    /// <param name="cancellationToken">Cancels the start.</param>
    /// <returns>The listening host.</returns>
    public static async Task<SoapTestHost> StartAsync(X509Certificate2 certificate, int port = 0, ServerCounters? counters = null, SecureConversationOptions? secureConversation = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        ArgumentOutOfRangeException.ThrowIfNegative(port);
        counters ??= new ServerCounters();

        // The empty builder reads no appsettings, launchSettings or environment variables: nothing outside this code
        // configures the test server.
        WebApplicationBuilder builder = WebApplication.CreateEmptyBuilder(new WebApplicationOptions());
        builder.WebHost.UseKestrelCore().ConfigureKestrel(kestrel =>
            kestrel.Listen(IPAddress.Loopback, port, listen => ConfigureListener(listen, certificate, counters)));

        builder.Logging.AddSimpleConsole().SetMinimumLevel(LogLevel.Warning);

        // SoapCore logs every fault it sends as an error; here faults are expected answers the client sees anyway.
        builder.Logging.AddFilter("SoapCore", LogLevel.None);

        builder.Services.AddSingleton(counters);
        builder.Services.AddHttpContextAccessor();
        builder.Services.AddSoapCore();
        builder.Services.AddSoapMessageProcessor(new UserNameTokenProcessor(UserNamePath));
        builder.Services.AddScoped<EchoService>();

        WebApplication app = builder.Build();

        // Plain middleware, not endpoint routing: the empty builder has no routing, and three fixed paths need none.
        secureConversation ??= new SecureConversationOptions();
        if (!Enum.IsDefined(secureConversation.Concurrency))
        {
            throw new ArgumentOutOfRangeException(
                nameof(secureConversation), secureConversation.Concurrency, $"Serve security sessions with {nameof(ServiceConcurrency.Single)} or {nameof(ServiceConcurrency.Multiple)}.");
        }

        // Every request's W3C traceparent header, as a service continuing the caller's trace would read it.
        app.Use(next => context =>
        {
            if (context.Request.Headers.TryGetValue("traceparent", out var traceParent) && traceParent.ToString() is { Length: > 0 } value)
            {
                counters.TraceParentReceived(value);
            }

            return next(context);
        });

        var tokens = new SecurityContextStore(secureConversation);
        var secureConversationEndpoint = new SecureConversationEndpoint(tokens, secureConversation, counters);
        app.Use(next => context =>
            context.Request.Path == SecureConversationPath && HttpMethods.IsPost(context.Request.Method)
                ? secureConversationEndpoint.HandleAsync(context)
                : next(context));
        IApplicationBuilder pipeline = app;
        pipeline.UseSoapEndpoint<EchoService>(options => Configure(options, BasicPath, MessageVersion.Soap11));
        pipeline.UseSoapEndpoint<EchoService>(options => Configure(options, WsPath, MessageVersion.Soap12WSAddressing10));
        pipeline.UseSoapEndpoint<EchoService>(options => Configure(options, UserNamePath, MessageVersion.Soap12WSAddressing10));

        try
        {
            await app.StartAsync(cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            await app.DisposeAsync().ConfigureAwait(false);
            throw;
        }

        return new SoapTestHost(app, BoundPort(app), counters, tokens);
    }

    /// <summary>Creates the client binding for <see cref="BasicAddress"/>: SOAP 1.1 over HTTPS, no client credential.</summary>
    /// <returns>A new binding.</returns>
    public static BasicHttpsBinding CreateBasicBinding() => new(BasicHttpsSecurityMode.Transport);

    /// <summary>Creates the client binding for <see cref="WsAddress"/>: SOAP 1.2 with WS-Addressing over HTTPS, no client credential.</summary>
    /// <returns>A new binding.</returns>
    public static WSHttpBinding CreateWsBinding()
    {
        var binding = new WSHttpBinding(SecurityMode.Transport);
        binding.Security.Transport.ClientCredentialType = HttpClientCredentialType.None;
        return binding;
    }

    /// <summary>
    /// Creates the client binding for <see cref="UserNameAddress"/>: a <see cref="WSHttpBinding"/> with
    /// <see cref="SecurityMode.TransportWithMessageCredential"/>, a UserName credential and no security context, turned
    /// into a <see cref="CustomBinding"/> whose <see cref="SecurityBindingElement.EnableUnsecuredResponse"/> is set.
    /// </summary>
    /// <remarks>
    /// <see cref="SecurityBindingElement.EnableUnsecuredResponse"/> is a property of THIS TEST SERVER, not of the
    /// library: SoapCore checks the request's UsernameToken but answers with no WS-Security header (no timestamp), which
    /// a plain <see cref="WSHttpBinding"/> rejects. A real WCF service signs its response with a timestamp and needs no
    /// such setting; code talking to one should use the plain binding.
    /// </remarks>
    /// <returns>A new binding; set the user name and password on the channel factory's client credentials.</returns>
    public static Binding CreateUserNameBinding()
    {
        var binding = new WSHttpBinding(SecurityMode.TransportWithMessageCredential);
        binding.Security.Message.ClientCredentialType = MessageCredentialType.UserName;
        binding.Security.Message.EstablishSecurityContext = false;

        BindingElementCollection elements = binding.CreateBindingElements();
        SecurityBindingElement security = elements.Find<SecurityBindingElement>()
            ?? throw new InvalidOperationException("A WSHttpBinding with message credentials has a security binding element.");
        security.EnableUnsecuredResponse = true;
        return new CustomBinding(elements) { Name = "UserNameOverHttps" };
    }

    /// <summary>
    /// Creates the client binding for <see cref="SecureConversationAddress"/>, the 2007 pool's scenario: a plain
    /// <see cref="WSHttpBinding"/> with <see cref="SecurityMode.TransportWithMessageCredential"/>, a UserName credential
    /// and <see cref="NonDualMessageSecurityOverHttp.EstablishSecurityContext"/> on, so every channel open negotiates a
    /// security context token (RST/SCT) and every call is signed with a key derived from it.
    /// </summary>
    /// <returns>A new binding; set the user name and password on the channel factory's client credentials.</returns>
    public static WSHttpBinding CreateSecureConversationBinding()
    {
        var binding = new WSHttpBinding(SecurityMode.TransportWithMessageCredential);
        binding.Security.Message.ClientCredentialType = MessageCredentialType.UserName;
        binding.Security.Message.EstablishSecurityContext = true;
        return binding;
    }

    /// <summary>
    /// Creates an endpoint address whose DNS identity is the certificate's name, so the client's identity check matches
    /// the test certificate although the address is an IP.
    /// </summary>
    /// <param name="uri">One of the host's addresses.</param>
    /// <returns>The endpoint address.</returns>
    public static EndpointAddress CreateAddress(Uri uri) => new(uri, new DnsEndpointIdentity(TestCertificate.DnsName));

    /// <summary>
    /// Stops Kestrel and drops every connection at once, as a server going down would, and frees the port: afterwards a
    /// new host can be started on it.
    /// </summary>
    /// <returns>A task that completes when the listener and every connection are closed.</returns>
    public async Task StopAsync()
    {
        if (Interlocked.Exchange(ref _stopped, 1) == 1)
        {
            return;
        }

        // An already cancelled token skips the graceful drain: Kestrel aborts the idle keep-alive connections the client
        // pools instead of waiting for them, which is both what "going down" means and what keeps tests fast.
        using (var now = new CancellationTokenSource())
        {
            await now.CancelAsync().ConfigureAwait(false);
            await _app.StopAsync(now.Token).ConfigureAwait(false);
        }

        await _app.DisposeAsync().ConfigureAwait(false);
    }

    /// <inheritdoc cref="StopAsync"/>
    public async ValueTask DisposeAsync() => await StopAsync().ConfigureAwait(false);

    private static void ConfigureListener(ListenOptions listen, X509Certificate2 certificate, ServerCounters counters)
    {
        // HTTP/1.1 only: the WCF client speaks nothing else, and one request per connection at a time makes the
        // connection counts mean what the tests read them as.
        listen.Protocols = HttpProtocols.Http1;

        // Connection middleware runs in the order added: before UseHttps it sees every accepted TCP connection, after
        // UseHttps only the connections whose handshake completed.
        listen.Use(next => connection =>
        {
            counters.ConnectionAccepted();
            return next(connection);
        });
        listen.UseHttps(new HttpsConnectionAdapterOptions
        {
            ServerCertificate = certificate,
            ClientCertificateMode = ClientCertificateMode.NoCertificate,
        });
        listen.Use(next => connection =>
        {
            counters.TlsHandshakeCompleted();
            return next(connection);
        });
    }

    private static void Configure(SoapCoreOptions options, string path, MessageVersion version)
    {
        options.Path = path;
        options.EncoderOptions = [new SoapEncoderOptions { MessageVersion = version }];
        options.SoapSerializer = SoapSerializer.DataContractSerializer;

        // No WSDL: the tests build their clients from the contract.
        options.HttpGetEnabled = false;
        options.HttpsGetEnabled = false;
    }

    private static int BoundPort(WebApplication app)
    {
        // With port 0 only Kestrel knows the port it bound; it reports it as the listen address.
        string address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
        return new Uri(address).Port;
    }
}
