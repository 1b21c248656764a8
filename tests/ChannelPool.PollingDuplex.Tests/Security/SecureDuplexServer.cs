using System.Net;
using System.Net.Http.Headers;
using System.Security.Claims;
using System.Security.Cryptography;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authentication.Cookies;
using Microsoft.AspNetCore.Authentication.JwtBearer;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.DataProtection;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Microsoft.IdentityModel.JsonWebTokens;
using Microsoft.IdentityModel.Tokens;

namespace ChannelPool.PollingDuplex.Tests.Security;

/// <summary>The session store a security test runs against.</summary>
public enum DuplexStore
{
    /// <summary>Sessions in the server process (<c>MapPollingDuplexPubSub</c>).</summary>
    InMemory,

    /// <summary>Sessions in a redis-server the test starts (<c>MapPollingDuplexPubSubOnRedis</c>).</summary>
    Redis,
}

/// <summary>
/// The pub/sub service on Kestrel (127.0.0.1, plain HTTP), on either store, behind real ASP.NET Core authentication: JWT
/// bearer tokens signed with a key made for this test run, and cookies from <c>POST /login/{user}</c>. A policy scheme
/// picks JWT for a request with <c>Authorization: Bearer</c> and the cookie otherwise, as an app serving both API
/// clients and browsers would. Each test states its topic rule.
/// </summary>
internal sealed class SecureDuplexServer : IAsyncDisposable
{
    private const string Issuer = "channelpool-tests";
    private const string Audience = "polling-duplex";
    private static readonly SymmetricSecurityKey SigningKey = new(RandomNumberGenerator.GetBytes(32));
    private readonly WebApplication _app;
    private readonly RedisServerProcess? _redis;

    private SecureDuplexServer(WebApplication app, RedisServerProcess? redis)
    {
        _app = app;
        _redis = redis;
        var listening = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
        Address = new Uri(listening.TrimEnd('/') + "/pubsub");
    }

    /// <summary>Gets the pub/sub endpoint's address.</summary>
    public Uri Address { get; }

    public IServiceProvider Services => _app.Services;

    /// <summary>Gets the configuration of the server's own redis-server, or null on the in-memory store.</summary>
    public string? RedisConfiguration => _redis?.Configuration;

    /// <summary>Gets what the server logged.</summary>
    public FakeLogCollector Logs => _app.Services.GetFakeLogCollector();

    /// <summary>Starts a server on <paramref name="store"/>; <paramref name="configure"/> gives the topic rule and any other option.</summary>
    public static async Task<SecureDuplexServer> StartAsync(
        DuplexStore store,
        Action<PollingDuplexOptions> configure,
        Action<IServiceCollection>? services = null,
        Action<WebApplication>? pipeline = null,
        Action<RouteGroupBuilder>? routes = null)
    {
        RedisServerProcess? redis = null;
        if (store == DuplexStore.Redis)
        {
            Assume.That(RedisServerProcess.IsInstalled, $"{RedisServerProcess.Executable} is not installed; .ci/run installs it.");
            redis = await RedisServerProcess.StartAsync();
        }

        try
        {
            var builder = WebApplication.CreateSlimBuilder();
            builder.Logging.ClearProviders();
            builder.Logging.SetMinimumLevel(LogLevel.Information);

            // The collector keeps every record: ASP.NET Core's two per request would make it the flood test's largest object.
            builder.Logging.AddFilter("Microsoft", LogLevel.Warning);
            builder.Services.AddFakeLogging();
            builder.WebHost.UseKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0));
            builder.Services.AddAuthentication("api-or-browser")
                .AddPolicyScheme("api-or-browser", "JWT for API clients, the cookie for browsers", o => o.ForwardDefaultSelector = context =>
                    context.Request.Headers.Authorization.ToString().StartsWith("Bearer ", StringComparison.Ordinal) ? JwtBearerDefaults.AuthenticationScheme : CookieAuthenticationDefaults.AuthenticationScheme)
                .AddJwtBearer(o => o.TokenValidationParameters = new TokenValidationParameters
                {
                    ValidIssuer = Issuer,
                    ValidAudience = Audience,
                    IssuerSigningKey = SigningKey,
                })
                .AddCookie(o => o.Events.OnRedirectToLogin = context =>
                {
                    context.Response.StatusCode = StatusCodes.Status401Unauthorized;
                    return Task.CompletedTask;
                });
            builder.Services.AddAuthorization();

            // Cookie keys in memory for this server only: nothing written to the profile's key ring.
            builder.Services.AddDataProtection().UseEphemeralDataProtectionProvider();
            builder.Services.AddPollingDuplexPubSub();
            if (redis is not null)
            {
                builder.Services.AddPollingDuplexRedis(o => o.Configuration = redis.Configuration);
            }

            services?.Invoke(builder.Services);
            var app = builder.Build();
            pipeline?.Invoke(app);
            app.MapPost("/login/{user}", (string user, HttpContext context) =>
                context.SignInAsync(CookieAuthenticationDefaults.AuthenticationScheme, new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.NameIdentifier, user)], CookieAuthenticationDefaults.AuthenticationScheme))));
            var group = store == DuplexStore.InMemory ? app.MapPollingDuplexPubSub("/pubsub", configure) : app.MapPollingDuplexPubSubOnRedis("/pubsub", configure);
            routes?.Invoke(group);
            await app.StartAsync();
            return new SecureDuplexServer(app, redis);
        }
        catch
        {
            if (redis is not null)
            {
                await redis.DisposeAsync();
            }

            throw;
        }
    }

    /// <summary>A JWT for <paramref name="user"/> (its <c>sub</c>), signed with this run's key.</summary>
    public static string TokenFor(string user) => new JsonWebTokenHandler().CreateToken(new SecurityTokenDescriptor
    {
        Subject = new ClaimsIdentity([new Claim("sub", user)]),
        Issuer = Issuer,
        Audience = Audience,
        Expires = DateTime.UtcNow.AddHours(1),
        SigningCredentials = new SigningCredentials(SigningKey, SecurityAlgorithms.HmacSha256),
    });

    /// <summary>A JWT with exactly <paramref name="claims"/>, signed with this run's key, that expires at <paramref name="expires"/>.</summary>
    public static string TokenWith(IEnumerable<Claim> claims, DateTime expires) => new JsonWebTokenHandler().CreateToken(new SecurityTokenDescriptor
    {
        Subject = new ClaimsIdentity(claims),
        Issuer = Issuer,
        Audience = Audience,
        NotBefore = DateTime.UtcNow.AddMinutes(-1),
        IssuedAt = DateTime.UtcNow.AddMinutes(-1),
        Expires = expires,
        SigningCredentials = new SigningCredentials(SigningKey, SecurityAlgorithms.HmacSha256),
    });

    /// <summary>An HTTP client whose every request carries <paramref name="jwt"/>.</summary>
    public static HttpClient ClientWithToken(string jwt)
    {
        var http = DuplexCluster.CreateHttpClient();
        http.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", jwt);
        return http;
    }

    /// <summary>An HTTP client whose every request carries <paramref name="user"/>'s JWT, or none for <see langword="null"/>.</summary>
    public static HttpClient ClientFor(string? user)
    {
        var http = DuplexCluster.CreateHttpClient();
        if (user is not null)
        {
            http.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", TokenFor(user));
        }

        return http;
    }

    /// <summary>An HTTP client signed in as <paramref name="user"/> with a cookie, as a browser would be.</summary>
    public async Task<HttpClient> CookieClientForAsync(string user)
    {
        var http = new HttpClient(new SocketsHttpHandler { CookieContainer = new CookieContainer(), MaxConnectionsPerServer = int.MaxValue }) { Timeout = Timeout.InfiniteTimeSpan };
        using var login = await http.PostAsync(new Uri(Address, "/login/" + user), null);
        Assert.That(login.StatusCode, Is.EqualTo(HttpStatusCode.OK), "the test's cookie sign-in");
        return http;
    }

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
        if (_redis is not null)
        {
            await _redis.DisposeAsync();
        }
    }
}
