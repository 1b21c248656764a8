using System.Globalization;
using System.Threading.RateLimiting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features.Authentication;
using Microsoft.AspNetCore.RateLimiting;

namespace ChannelPool.PollingDuplex.RateLimiting;

/// <summary>
/// Per-client limits for a polling duplex endpoint, through ASP.NET Core's rate limiter: a token bucket per signed-in
/// user, keyed by the id the endpoint itself records (its <see cref="PollingDuplexOptions.UserIdSelector"/>), or per
/// remote address for anonymous clients. A request costs what it asks of the server: an open or a close one token, a
/// send one token per message it carries (the first when the request arrives, the rest once its messages are read).
/// Polls of signed-in users are not limited (one per session at a time, and sessions per user are capped); anonymous
/// polls take tokens from a bucket of their own per address, so polls with forged tokens are limited too. A refused
/// request gets <c>429 rate-limited</c> with <c>Retry-After</c> and nothing of it is done; clients wait it out and
/// repeat it.
/// </summary>
/// <remarks>
/// <code>
/// builder.Services.AddRateLimiter(o =&gt; o.AddPolicy(PollingDuplexRateLimitPolicy.Name, new PollingDuplexRateLimitPolicy()));
/// app.UseRateLimiter();
/// app.MapPollingDuplexPubSub("/pubsub", ...).RequireRateLimiting(PollingDuplexRateLimitPolicy.Name);
/// </code>
/// Behind a proxy or load balancer, apply <c>UseForwardedHeaders</c> (with the proxy as known) before the rate limiter,
/// or every anonymous client shares the proxy's buckets.
/// </remarks>
public sealed class PollingDuplexRateLimitPolicy : IRateLimiterPolicy<string>, IDisposable
{
    /// <summary>The policy's usual name, for <c>AddPolicy</c> and <c>RequireRateLimiting</c>.</summary>
    public const string Name = "polling-duplex";

    private readonly PartitionedRateLimiter<string> _buckets;

    /// <summary>Initializes the policy.</summary>
    /// <param name="burst">How many tokens a client's bucket holds: the most messages it may send at once. Defaults to 128, room for two full send requests at the default <see cref="PollingDuplexOptions.MaxMessagesPerSend"/>.</param>
    /// <param name="perSecond">How many tokens the bucket gets back every second: the sustained rate. Defaults to 64.</param>
    /// <param name="anonymousPollBurst">How many polls one address's anonymous clients may make at once. Defaults to 256.</param>
    /// <param name="anonymousPollsPerSecond">How many polls a second they may make sustained. Defaults to 128.</param>
    /// <exception cref="ArgumentOutOfRangeException">A value is less than 1.</exception>
    public PollingDuplexRateLimitPolicy(int burst = 128, int perSecond = 64, int anonymousPollBurst = 256, int anonymousPollsPerSecond = 128)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(burst, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(perSecond, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(anonymousPollBurst, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(anonymousPollsPerSecond, 1);
        Burst = burst;
        _buckets = PartitionedRateLimiter.Create<string, string>(
            key => RateLimitPartition.GetTokenBucketLimiter(key, k => Bucket(k.StartsWith("poll:", StringComparison.Ordinal) ? (anonymousPollBurst, anonymousPollsPerSecond) : (burst, perSecond))),
            StringComparer.Ordinal);
    }

    /// <summary>Gets how many tokens a client's bucket holds.</summary>
    public int Burst { get; }

    /// <inheritdoc />
    public Func<OnRejectedContext, CancellationToken, ValueTask>? OnRejected { get; } = static (context, _) =>
        new(WriteRejectedAsync(context.HttpContext, context.Lease.TryGetMetadata(MetadataName.RetryAfter, out var retryAfter) ? retryAfter : TimeSpan.FromSeconds(1)));

    /// <inheritdoc />
    public RateLimitPartition<string> GetPartition(HttpContext httpContext)
    {
        ArgumentNullException.ThrowIfNull(httpContext);
        var options = httpContext.GetEndpoint()?.Metadata.GetMetadata<PollingDuplexEndpointMetadata>()?.Options;
        var userId = options is null ? null : UserIdOf(httpContext, options);
        string key;
        if (HttpMethods.IsGet(httpContext.Request.Method))
        {
            if (userId is not null)
            {
                return RateLimitPartition.GetNoLimiter(string.Empty);
            }

            key = "poll:" + httpContext.Connection.RemoteIpAddress;
        }
        else
        {
            key = userId is not null ? "user:" + userId : "address:" + httpContext.Connection.RemoteIpAddress;

            // The rest of a send's cost is taken once its messages are read, from the same bucket.
            httpContext.Features.Set(new DuplexRateLimitCharge(this, key));
        }

        return RateLimitPartition.Get(key, k => new SharedBucket(_buckets, k));
    }

    /// <inheritdoc />
    public void Dispose() => _buckets.Dispose();

    /// <summary>Takes <paramref name="tokens"/> more from <paramref name="key"/>'s bucket, at most a full bucket.</summary>
    internal RateLimitLease Charge(string key, int tokens) => _buckets.AttemptAcquire(key, Math.Min(tokens, Burst));

    /// <summary>Answers a refused request: <c>429 rate-limited</c> with <c>Retry-After</c> and a problem body.</summary>
    internal static Task WriteRejectedAsync(HttpContext context, TimeSpan wait)
    {
        context.Response.StatusCode = StatusCodes.Status429TooManyRequests;
        context.Response.Headers.RetryAfter = Math.Max(1, (int)Math.Ceiling(wait.TotalSeconds)).ToString(CultureInfo.InvariantCulture);
        return Results.Problem(
            "This client asked for more work than its limit allows (each message of a send counts); wait Retry-After seconds and repeat the request.",
            statusCode: StatusCodes.Status429TooManyRequests,
            title: "Too many requests",
            type: "urn:channelpool:polling-duplex:rate-limited",
            extensions: new Dictionary<string, object?> { ["code"] = "rate-limited" }).ExecuteAsync(context);
    }

    /// <summary>The endpoint's own user id for the request, or null when anonymous or unidentified (the endpoint refuses those itself).</summary>
    private static string? UserIdOf(HttpContext context, PollingDuplexOptions options)
    {
        if (context.Features.Get<IHttpAuthenticationFeature>()?.User is not { } user)
        {
            return null;
        }

        try
        {
            return options.UserIdSelector(user) is { Length: > 0 } id ? id : null;
        }
        catch (InvalidOperationException)
        {
            return null;
        }
    }

    private static TokenBucketRateLimiterOptions Bucket((int Burst, int PerSecond) size) => new()
    {
        TokenLimit = size.Burst,
        TokensPerPeriod = size.PerSecond,
        ReplenishmentPeriod = TimeSpan.FromSeconds(1),
        QueueLimit = 0,
        AutoReplenishment = true,
    };

    /// <summary>
    /// The middleware's limiter for one key: a view of the policy's own bucket for it, so the endpoint can charge the
    /// same bucket for the rest of a send. The policy's partitioned limiter drops buckets that have sat full a while.
    /// </summary>
    private sealed class SharedBucket(PartitionedRateLimiter<string> buckets, string key) : RateLimiter
    {
        private long _lastUsed = TimeProvider.System.GetTimestamp();

        public override TimeSpan? IdleDuration => TimeProvider.System.GetElapsedTime(Volatile.Read(ref _lastUsed));

        public override RateLimiterStatistics? GetStatistics() => buckets.GetStatistics(key);

        protected override RateLimitLease AttemptAcquireCore(int permitCount)
        {
            Volatile.Write(ref _lastUsed, TimeProvider.System.GetTimestamp());
            return buckets.AttemptAcquire(key, permitCount);
        }

        protected override ValueTask<RateLimitLease> AcquireAsyncCore(int permitCount, CancellationToken cancellationToken)
        {
            Volatile.Write(ref _lastUsed, TimeProvider.System.GetTimestamp());
            return buckets.AcquireAsync(key, permitCount, cancellationToken);
        }
    }
}

/// <summary>Set on a request by <see cref="PollingDuplexRateLimitPolicy"/>: the bucket the rest of a send's cost comes from.</summary>
internal sealed class DuplexRateLimitCharge(PollingDuplexRateLimitPolicy policy, string key)
{
    /// <summary>Takes <paramref name="tokens"/> more; returns false, with how long to wait, when the bucket has not got them.</summary>
    public bool TryCharge(int tokens, out TimeSpan retryAfter)
    {
        retryAfter = TimeSpan.Zero;
        if (tokens <= 0)
        {
            return true;
        }

        using var lease = policy.Charge(key, tokens);
        if (lease.IsAcquired)
        {
            return true;
        }

        retryAfter = lease.TryGetMetadata(MetadataName.RetryAfter, out var wait) ? wait : TimeSpan.FromSeconds(1);
        return false;
    }
}

/// <summary>Endpoint metadata that carries an endpoint's options, so its rate-limit policy keys users as the endpoint does.</summary>
internal sealed class PollingDuplexEndpointMetadata(PollingDuplexOptions options)
{
    public PollingDuplexOptions Options { get; } = options;
}
