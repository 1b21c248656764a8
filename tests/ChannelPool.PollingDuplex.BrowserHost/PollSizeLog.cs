using System.Globalization;

namespace ChannelPool.PollingDuplex.BrowserHost;

/// <summary>
/// How many messages each flood poll response carried, for the browser client's measurements: the difference between a
/// session's successive poll acknowledgements (every client acknowledges all it was handed, and the flood never drops).
/// </summary>
internal sealed class PollSizeLog : IMiddleware
{
    private readonly Lock _lock = new();
    private readonly Dictionary<string, long> _lastAck = [];
    private readonly List<long> _sizes = [];

    public (long Polls, long Messages, long[] Percentiles, Dictionary<string, long> Buckets) Snapshot()
    {
        long[] sizes;
        using (_lock.EnterScope())
        {
            sizes = [.. _sizes];
        }

        Array.Sort(sizes);
        long At(double p) => sizes.Length == 0 ? 0 : sizes[Math.Min(sizes.Length - 1, (int)Math.Ceiling(p * sizes.Length) - 1)];
        var buckets = new Dictionary<string, long>();
        foreach (var size in sizes)
        {
            var upper = size <= 1 ? 1 : (long)Math.Pow(2, Math.Ceiling(Math.Log2(size)));
            var key = string.Create(CultureInfo.InvariantCulture, $"<={upper}");
            buckets[key] = buckets.GetValueOrDefault(key) + 1;
        }

        return (sizes.Length, sizes.Sum(), [At(0.1), At(0.5), At(0.9), sizes.Length == 0 ? 0 : sizes[^1]], buckets);
    }

    public void Clear()
    {
        using (_lock.EnterScope())
        {
            _lastAck.Clear();
            _sizes.Clear();
        }
    }

    public Task InvokeAsync(HttpContext context, RequestDelegate next)
    {
        // /flood/sessions/{id}/poll?ack=N
        var path = context.Request.Path.Value;
        if (path is not null && path.StartsWith("/flood/sessions/", StringComparison.Ordinal) && path.EndsWith("/poll", StringComparison.Ordinal)
            && long.TryParse(context.Request.Query["ack"], CultureInfo.InvariantCulture, out var ack))
        {
            using (_lock.EnterScope())
            {
                if (_lastAck.TryGetValue(path, out var last) && ack > last)
                {
                    _sizes.Add(ack - last);
                }

                _lastAck[path] = Math.Max(ack, last);
            }
        }

        return next(context);
    }
}
