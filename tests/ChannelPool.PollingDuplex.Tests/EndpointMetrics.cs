using System.Collections.Concurrent;
using System.Diagnostics.Metrics;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>Listens to the polling duplex meter and sums what one endpoint records, by instrument and by poll outcome.</summary>
internal sealed class EndpointMetrics : IDisposable
{
    private readonly ConcurrentDictionary<string, long> _totals = new();
    private readonly MeterListener _listener;

    public EndpointMetrics(string endpoint)
    {
        _listener = new MeterListener
        {
            InstrumentPublished = (instrument, l) =>
            {
                if (instrument.Meter.Name == PollingDuplexTelemetry.MeterName)
                {
                    l.EnableMeasurementEvents(instrument);
                }
            },
        };
        _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            var ours = false;
            string? outcome = null;
            foreach (var tag in tags)
            {
                ours |= tag.Key == PollingDuplexTelemetry.EndpointTag && Equals(tag.Value, endpoint);
                outcome = tag.Key == "pollingduplex.poll.outcome" ? (string?)tag.Value : outcome;
            }

            if (ours)
            {
                _totals.AddOrUpdate(instrument.Name, value, (_, total) => total + value);
                if (outcome is not null)
                {
                    _totals.AddOrUpdate($"{instrument.Name} {outcome}", value, (_, total) => total + value);
                }
            }
        });
        _listener.Start();
    }

    /// <summary>Gets the sum of <paramref name="instrument"/>'s measurements, or of those with one poll outcome (<c>"pollingduplex.polls empty"</c>).</summary>
    public long this[string instrument] => _totals.GetValueOrDefault(instrument);

    public override string ToString() => string.Join(", ", _totals.OrderBy(t => t.Key).Select(t => $"{t.Key} = {t.Value}"));

    public void Dispose() => _listener.Dispose();
}
