using System.Globalization;
using System.Threading.RateLimiting;
using ChannelPool.PollingDuplex;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.RateLimiting;

namespace ChannelPool.PollingDuplex.SampleServer;

/// <summary>
/// An example per-client limit for a polling duplex endpoint, through ASP.NET Core's rate limiter: each client gets a
/// token bucket, keyed by its signed-in user id or, for an anonymous client, by its remote address. Opens, sends and
/// closes take a token each; polls are not limited, because the protocol already allows one at a time per session and
/// a client that is refused its poll falls behind rather than slowing down. A refused request gets
/// <c>429 rate-limited</c> with <c>Retry-After</c>, which clients wait out and repeat.
/// </summary>
/// <remarks>
/// Behind a proxy or load balancer, the remote address is the proxy's: apply <c>UseForwardedHeaders</c> with the
/// proxy's address as known before the rate limiter, or every anonymous client shares one bucket.
/// </remarks>
/// <param name="burst">How many requests a client may make at once.</param>
/// <param name="perSecond">How many tokens each client's bucket gets back every second.</param>
public sealed class DuplexRateLimitPolicy(int burst = 40, int perSecond = 20) : IRateLimiterPolicy<string>
{
    /// <summary>The policy's name, for <c>AddPolicy</c> and <c>RequireRateLimiting</c>.</summary>
    public const string Name = "polling-duplex";

    /// <inheritdoc />
    public Func<OnRejectedContext, CancellationToken, ValueTask>? OnRejected { get; } = static async (context, cancellationToken) =>
    {
        var response = context.HttpContext.Response;
        var wait = context.Lease.TryGetMetadata(MetadataName.RetryAfter, out var retryAfter) ? retryAfter : TimeSpan.FromSeconds(1);
        response.StatusCode = StatusCodes.Status429TooManyRequests;
        response.Headers.RetryAfter = Math.Max(1, (int)Math.Ceiling(wait.TotalSeconds)).ToString(CultureInfo.InvariantCulture);
        await Results.Problem(
            "This client made more requests than its limit allows; wait Retry-After seconds and repeat the request.",
            statusCode: StatusCodes.Status429TooManyRequests,
            title: "Too many requests",
            type: "urn:channelpool:polling-duplex:rate-limited",
            extensions: new Dictionary<string, object?> { ["code"] = "rate-limited" }).ExecuteAsync(context.HttpContext);
    };

    /// <inheritdoc />
    public RateLimitPartition<string> GetPartition(HttpContext httpContext)
    {
        ArgumentNullException.ThrowIfNull(httpContext);
        if (HttpMethods.IsGet(httpContext.Request.Method))
        {
            return RateLimitPartition.GetNoLimiter("polls");
        }

        // The same user id a session records, so a user's sessions share one bucket however many they open.
        var key = PollingDuplexOptions.DefaultUserId(httpContext.User) is { } user
            ? "user:" + user
            : "address:" + httpContext.Connection.RemoteIpAddress;
        return RateLimitPartition.GetTokenBucketLimiter(key, _ => new TokenBucketRateLimiterOptions
        {
            TokenLimit = burst,
            TokensPerPeriod = perSecond,
            ReplenishmentPeriod = TimeSpan.FromSeconds(1),
            QueueLimit = 0,
            AutoReplenishment = true,
        });
    }
}
