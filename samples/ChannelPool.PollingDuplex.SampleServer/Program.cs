// The server for the curl walk-through in docs/polling-duplex-protocol.md, and the browser client's chat sample:
//   dotnet run --project samples/ChannelPool.PollingDuplex.SampleServer
// It serves the pub/sub service at https://127.0.0.1:5001/duplex over HTTP/1.1 and HTTP/2. The certificate is made in
// memory at start; its public part is written to a file so curl can trust exactly it (--cacert), not every certificate.
// The chat page is on http://127.0.0.1:5000/: plain HTTP on loopback, which a browser treats as a secure context, so
// it opens with no certificate to trust. --HttpsPort and --HttpPort choose other ports (0: any free one).
using System.Net;
using ChannelPool.PollingDuplex.RateLimiting;
using ChannelPool.Testing;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;

var certificate = TestCertificate.CreateEcdsa();
var certificateFile = Path.Combine(Path.GetTempPath(), "channelpool-sample-server.pem");
await File.WriteAllTextAsync(certificateFile, certificate.ExportCertificatePem());

var builder = WebApplication.CreateSlimBuilder(args);
builder.WebHost.UseKestrel(kestrel =>
{
    kestrel.Listen(IPAddress.Loopback, builder.Configuration.GetValue("HttpsPort", 5001), listen =>
    {
        listen.Protocols = HttpProtocols.Http1AndHttp2;
        listen.UseHttps(certificate);
    });
    kestrel.Listen(IPAddress.Loopback, builder.Configuration.GetValue("HttpPort", 5000));
});

// Error bodies go through the host's problem-details service: here the default one, which adds a traceId to each.
builder.Services.AddProblemDetails();

// Per-client limits (the package's PollingDuplexRateLimitPolicy): a token bucket per signed-in user, or per remote
// address for anonymous clients; a send costs a token per message, anonymous polls take from a bucket of their own. A
// refused request gets 429 rate-limited with Retry-After.
builder.Services.AddRateLimiter(limiter => limiter.AddPolicy(PollingDuplexRateLimitPolicy.Name, new PollingDuplexRateLimitPolicy()));

// Server-side publish (IPubSubPublisher), should the app push from a background service.
builder.Services.AddPollingDuplexPubSub();
var app = builder.Build();
app.UseRateLimiter();
app.MapPollingDuplexPubSub("/duplex", options =>
{
    // Who may use which topic: every client, every topic. This server demonstrates the protocol to anonymous curl
    // commands; a real app gives a rule here instead (options.Topics.Authorize or .Policy), see docs/polling-duplex.md.
    options.Topics.AllowAnonymous = true;
}).RequireRateLimiting(PollingDuplexRateLimitPolicy.Name);
app.UseChatPage();

app.Lifetime.ApplicationStarted.Register(() =>
{
    var addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses;
    var https = addresses.First(a => a.StartsWith("https:", StringComparison.Ordinal));
    Console.WriteLine($"Polling duplex pub/sub at {https}/duplex. Ctrl+C stops it.");
    Console.WriteLine($"Trust its certificate with: curl --cacert {certificateFile} ...");
    Console.WriteLine($"  BASE={https}/duplex; CA={certificateFile}");
    Console.WriteLine($"Chat page (the browser client): {addresses.First(a => a.StartsWith("http:", StringComparison.Ordinal))}/");
});
await app.RunAsync();
