using System.Diagnostics;
using ChannelPool.Perf.Clients;
using ChannelPool.Perf.Stats;

namespace ChannelPool.Perf.Tests;

public class StatsTests
{
    [Test]
    public void LatencySummary_GivesPercentilesMeanAndSampleDeviation_ToThreeSignificantDigits()
    {
        // 1..100 ms: p50 is the 50th value, p95 the 95th, p99 the 99th; HdrHistogram keeps three significant digits.
        var recorder = new LatencyRecorder();
        foreach (var ms in Enumerable.Range(1, 100).Reverse())
        {
            recorder.Record(ms * Stopwatch.Frequency / 1000);
        }

        var summary = recorder.Summarize();

        Assert.That(summary.Count, Is.EqualTo(100));
        Assert.That(summary.P50Ms, Is.EqualTo(50).Within(0.1).Percent);
        Assert.That(summary.P95Ms, Is.EqualTo(95).Within(0.1).Percent);
        Assert.That(summary.P99Ms, Is.EqualTo(99).Within(0.1).Percent);
        Assert.That(summary.MaxMs, Is.EqualTo(100).Within(0.1).Percent);
        Assert.That(summary.MeanMs, Is.EqualTo(50.5).Within(0.1).Percent);
        Assert.That(summary.StdevMs, Is.EqualTo(29.011).Within(0.1).Percent, "sample standard deviation");
    }

    [Test]
    public async Task LatencyRecorder_SummarizesWhileOtherThreadsStillRecord()
    {
        // A broadcast summarizes a burst while its stragglers are still being recorded.
        var recorder = new LatencyRecorder();
        using var stop = new CancellationTokenSource();
        var writer = Task.Run(() =>
        {
            var n = 0L;
            while (!stop.IsCancellationRequested)
            {
                recorder.Record(1 + (n++ % 100_000));
            }
        });

        SpinWait.SpinUntil(() => recorder.Count > 0);
        var summaries = new List<LatencySummary>();
        for (var i = 0; i < 300; i++)
        {
            summaries.Add(recorder.Summarize());
        }

        await stop.CancelAsync();
        await writer;
        Assert.That(summaries.Select(s => s.Count), Is.Ordered, "every summary saw at least what the one before it saw");
        Assert.That(summaries[^1].Count, Is.GreaterThan(0));
    }

    [Test]
    public void LatencySummary_OfNothing_IsEmpty() =>
        Assert.That(new LatencyRecorder().Summarize(), Is.EqualTo(LatencySummary.Empty));

    [Test]
    public void Stamp_RoundTrips_AndRefusesAnythingElse()
    {
        var stamp = new Stamp(12, 345, 6_789_012_345);

        Assert.That(Stamp.TryParse(stamp.ToJson(), out var parsed), Is.True);
        Assert.That(parsed, Is.EqualTo(stamp));
        Assert.That(Stamp.TryParse("{\"k\":1,\"b\":2}"u8, out _), Is.False, "no timestamp");
        Assert.That(Stamp.TryParse("\"hello\""u8, out _), Is.False);
        Assert.That(Stamp.TryParse("{\"k\":1,"u8, out _), Is.False, "truncated");
    }

    [Test]
    public void NotificationData_IsFoundWhereverItSits()
    {
        var notification = "{\"topic\":\"t\",\"data\":{\"k\":1,\"b\":[1,2]}}"u8.ToArray();

        Assert.That(DuplexPubSubTransport.TryGetData(notification, out var range), Is.True);
        Assert.That(System.Text.Encoding.UTF8.GetString(notification.AsSpan()[range]), Is.EqualTo("{\"k\":1,\"b\":[1,2]}"));
        Assert.That(DuplexPubSubTransport.TryGetData("{\"topic\":\"t\"}"u8, out _), Is.False);
    }
}
