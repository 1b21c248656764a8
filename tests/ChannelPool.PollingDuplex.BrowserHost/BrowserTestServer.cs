using System.Net;
using System.Security.Claims;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authentication.Cookies;
using Microsoft.AspNetCore.DataProtection;
using System.Security.Cryptography;
using System.Text.Json;
using ChannelPool.PollingDuplex.PubSub;
using ChannelPool.Testing;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.FileProviders;

namespace ChannelPool.PollingDuplex.BrowserHost;

/// <summary>
/// Kestrel on 127.0.0.1: plain HTTP/1.1 (a loopback origin is a secure context, so the browser needs no certificate),
/// and with <c>--Https=true</c> also HTTPS with HTTP/1.1 and HTTP/2 and a certificate made in memory, whose SPKI hash
/// it prints so the test can make Chromium trust exactly that certificate. Its first line on stdout is JSON:
/// <c>{"http":…,"https":…,"spki":…}</c>.
/// </summary>
internal static class BrowserTestServer
{
    public static async Task<int> RunAsync(string[] args)
    {
        var builder = WebApplication.CreateSlimBuilder(args);
        builder.Logging.ClearProviders();
        var settings = builder.Configuration;
        var httpPort = settings.GetValue("HttpPort", 0);
        var https = settings.GetValue("Https", false);
        var certificate = https ? TestCertificate.CreateEcdsa() : null;
        builder.WebHost.UseKestrel(kestrel =>
        {
            kestrel.Listen(IPAddress.Loopback, httpPort, listen => listen.Protocols = HttpProtocols.Http1);
            if (certificate is not null)
            {
                kestrel.Listen(IPAddress.Loopback, 0, listen =>
                {
                    listen.Protocols = HttpProtocols.Http1AndHttp2;
                    listen.UseHttps(certificate);
                });
            }
        });
        builder.Services.AddSingleton<PubSubHandler>();
        builder.Services.AddSingleton<RequestLog>();
        builder.Services.AddSingleton<PollSizeLog>();

        // The CORS policy docs/polling-duplex.md shows for pages on another origin, with every 127.0.0.1 origin allowed.
        builder.Services.AddCors(o => o.AddPolicy("duplex", p => p
            .SetIsOriginAllowed(origin => Uri.TryCreate(origin, UriKind.Absolute, out var uri) && uri.Host == "127.0.0.1")
            .AllowCredentials()
            .WithHeaders(DuplexWire.SessionTokenHeader, "Authorization", "Content-Type", "X-App-Token")
            .WithMethods("GET", "POST", "DELETE")
            .WithExposedHeaders("Retry-After")
            .SetPreflightMaxAge(TimeSpan.FromMinutes(10))));

        // Cookie sign-in for /secure/echo, as a browser app has it: what a cross-site form would ride on.
        builder.Services.AddAuthentication(CookieAuthenticationDefaults.AuthenticationScheme).AddCookie(o => o.Events.OnRedirectToLogin = context =>
        {
            context.Response.StatusCode = StatusCodes.Status401Unauthorized;
            return Task.CompletedTask;
        });
        builder.Services.AddAuthorization();
        builder.Services.AddDataProtection().UseEphemeralDataProtectionProvider();

        var app = builder.Build();
        var pollTimeout = TimeSpan.FromMilliseconds(settings.GetValue("PollTimeoutMs", 5000));
        var pending = settings.GetValue("PendingMessages", 64);
        var overflow = settings.GetValue("OverflowPolicy", DuplexOverflowPolicy.FaultSession);
        var awayGrace = TimeSpan.FromMilliseconds(settings.GetValue("AwayGraceMs", 10_000));
        void Limits(PollingDuplexOptions o)
        {
            o.ServerPollTimeout = pollTimeout;
            o.MaxPendingMessagesPerSession = pending;
            o.OverflowPolicy = overflow;
            o.AwayGracePeriod = awayGrace;

            // Every test page is anonymous on loopback, one address for the whole run.
            o.MaxSessionsPerAddress = 1_000_000;
        }

        app.UseMiddleware<RequestLog>();
        app.UseMiddleware<PollSizeLog>();
        app.UseCors();
        app.UseAuthentication();
        app.UseAuthorization();
        if (settings["Pages"] is { Length: > 0 } pages)
        {
            app.UseDefaultFiles(new DefaultFilesOptions { FileProvider = new PhysicalFileProvider(Path.GetFullPath(pages)) });
            app.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(Path.GetFullPath(pages)), ServeUnknownFileTypes = false });
        }

        app.MapPollingDuplexBrowserClient();
        app.MapPollingDuplexPubSub("/pubsub", o =>
        {
            Limits(o);

            // Every topic is open to the anonymous test pages but two families, which show the client the rule's answers:
            // forbidden/… is denied (403 topic-forbidden), broken/… makes the rule throw (500 topic-authorization-failed).
            o.Topics.Authorize = (access, _) => access.Topic.StartsWith("broken/", StringComparison.Ordinal)
                ? throw new InvalidOperationException($"The test's topic rule breaks on {access.Topic} on purpose.")
                : ValueTask.FromResult(!access.Topic.StartsWith("forbidden/", StringComparison.Ordinal));
        });
        app.MapPollingDuplex<EchoHandler>("/echo", Limits);
        app.MapPollingDuplex<EchoHandler>("/cors/echo", Limits).RequireCors("duplex");
        app.MapPollingDuplex<EchoHandler>("/secure/echo", Limits).RequireAuthorization();
        app.MapPost("/login", (HttpContext context) => context.SignInAsync(new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.NameIdentifier, "alice")], CookieAuthenticationDefaults.AuthenticationScheme))));
        app.MapPost("/whoami", (HttpContext context) => Results.Text(context.User.Identity?.IsAuthenticated == true ? $"signed in as {context.User.FindFirst(ClaimTypes.NameIdentifier)?.Value}" : "anonymous"));
        app.MapPollingDuplex<FloodHandler>("/flood", o =>
        {
            Limits(o);
            o.MaxPendingMessagesPerSession = settings.GetValue("FloodWindow", 256);

            // Room in bytes for a window sent and unacknowledged plus a window queued, of messages up to 4 KiB, so the
            // window alone bounds a response. At the default 1 MiB a window of 2,048 256-byte messages (320 bytes held
            // each) left room for (1 MiB − 2,048 × 320) / 320 = 1,228 queued: the short responses of earlier runs.
            o.MaxPendingBytesPerSession = (int)Math.Clamp(2L * o.MaxPendingMessagesPerSession * (4096 + 64), o.MaxPendingBytesPerSession, int.MaxValue);
        });
        app.MapBrokenEndpoint("/broken");
        app.MapFloorEndpoint("/floor");
        app.MapControl("/control");
        await app.StartAsync();

        var addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses;
        var line = JsonSerializer.Serialize(new
        {
            http = addresses.Single(a => a.StartsWith("http:", StringComparison.Ordinal)).TrimEnd('/') + "/",
            https = addresses.SingleOrDefault(a => a.StartsWith("https:", StringComparison.Ordinal)) is { } secure ? secure.TrimEnd('/') + "/" : null,
            spki = certificate is null ? null : Convert.ToBase64String(SHA256.HashData(certificate.PublicKey.ExportSubjectPublicKeyInfo())),
        });
        Console.WriteLine(line);
        await app.WaitForShutdownAsync();
        return 0;
    }
}
