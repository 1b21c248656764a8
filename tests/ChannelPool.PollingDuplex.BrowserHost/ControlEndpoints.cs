using System.Globalization;
using System.Text;
using ChannelPool.PollingDuplex.PubSub;

namespace ChannelPool.PollingDuplex.BrowserHost;

/// <summary>What the tests ask of the server directly: publish from the server side, count subscribers, set a cookie, read the request log.</summary>
internal static class ControlEndpoints
{
    /// <summary>
    /// How many sessions an endpoint holds now (pending and active), read from its <c>pollingduplex.sessions</c> gauge
    /// as a metrics exporter would: what a test compares to find an orphan session.
    /// </summary>
    private static int SessionCount(string endpoint)
    {
        var total = 0;
        using var listener = new System.Diagnostics.Metrics.MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == PollingDuplexTelemetry.MeterName && instrument.Name == "pollingduplex.sessions")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<int>((_, value, tags, _) =>
        {
            foreach (var tag in tags)
            {
                if (tag.Key == PollingDuplexTelemetry.EndpointTag && Equals(tag.Value, endpoint))
                {
                    total += value;
                }
            }
        });
        listener.Start();
        listener.RecordObservableInstruments();
        return total;
    }

    public static void MapControl(this IEndpointRouteBuilder endpoints, string pattern)
    {
        var group = endpoints.MapGroup(pattern);

        // Publishes {"n":from}, {"n":from+1}, … to the topic: all at once before answering, or one every intervalMs, in
        // the background (202) or, with wait=true, answering 200 after the last one, so that a test knows when a stream
        // is over rather than guessing from the clock (a busy machine stretches a timer's ticks).
        group.MapPost("/publish", async (PubSubHandler pubsub, string topic, int count, int? intervalMs, int? from, bool? wait) =>
        {
            var first = from ?? 1;
            void Publish(int n) => pubsub.Publish(topic, Encoding.UTF8.GetBytes(string.Create(CultureInfo.InvariantCulture, $"{{\"n\":{n}}}")));
            if (intervalMs is not > 0)
            {
                for (var n = first; n < first + count; n++)
                {
                    Publish(n);
                }

                return Results.Ok();
            }

            var publishing = Task.Run(async () =>
            {
                using var timer = new PeriodicTimer(TimeSpan.FromMilliseconds(intervalMs.Value));
                for (var n = first; n < first + count; n++)
                {
                    Publish(n);
                    await timer.WaitForNextTickAsync();
                }
            });
            if (wait is true)
            {
                await publishing;
                return Results.Ok();
            }

            return Results.Accepted();
        });
        group.MapGet("/subscribers", (PubSubHandler pubsub, string topic) => Results.Json(new { count = pubsub.SubscriberCount(topic) }));
        group.MapGet("/sessions", (string endpoint) => Results.Json(new { count = SessionCount(endpoint) }));
        group.MapGet("/broken-polls", () => Results.Json(new { count = BrokenEndpoint.Polls }));
        group.MapGet("/cookie", (HttpContext context) =>
        {
            context.Response.Cookies.Append("app-session", "cookie-from-the-app", new CookieOptions { Path = "/", SameSite = SameSiteMode.Strict, HttpOnly = true });
            return Results.NoContent();
        });
        group.MapGet("/poll-sizes", (PollSizeLog log) =>
        {
            var (polls, messages, percentiles, buckets) = log.Snapshot();
            return Results.Json(new { polls, messages, p10 = percentiles[0], p50 = percentiles[1], p90 = percentiles[2], max = percentiles[3], buckets });
        });
        group.MapDelete("/poll-sizes", (PollSizeLog log) =>
        {
            log.Clear();
            return Results.NoContent();
        });
        group.MapGet("/requests", (RequestLog log) => Results.Json(log.Entries));
        group.MapDelete("/requests", (RequestLog log) =>
        {
            log.Clear();
            return Results.NoContent();
        });
    }
}

/// <summary>Records what each request to the echo endpoints carried: the application's header and cookie, and whether it had a session token.</summary>
internal sealed class RequestLog : IMiddleware
{
    private readonly Lock _lock = new();
    private readonly List<RequestLogEntry> _entries = [];

    public IReadOnlyList<RequestLogEntry> Entries
    {
        get
        {
            using (_lock.EnterScope())
            {
                return [.. _entries];
            }
        }
    }

    public void Clear()
    {
        using (_lock.EnterScope())
        {
            _entries.Clear();
        }
    }

    public Task InvokeAsync(HttpContext context, RequestDelegate next)
    {
        if (context.Request.Path.StartsWithSegments("/echo", StringComparison.Ordinal) || context.Request.Path.StartsWithSegments("/cors/echo", StringComparison.Ordinal))
        {
            var entry = new RequestLogEntry(
                context.Request.Method,
                context.Request.Path.Value ?? string.Empty,
                context.Request.Headers["X-App-Token"].ToString(),
                context.Request.Cookies["app-session"],
                context.Request.Headers.Authorization.ToString(),
                context.Request.Headers.ContainsKey(DuplexWire.SessionTokenHeader));
            using (_lock.EnterScope())
            {
                _entries.Add(entry);
            }
        }

        return next(context);
    }
}

internal sealed record RequestLogEntry(string Method, string Path, string AppToken, string? Cookie, string Authorization, bool HasSessionToken);
