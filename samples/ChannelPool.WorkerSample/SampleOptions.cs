namespace ChannelPool.WorkerSample;

/// <summary>How long the sample runs and how hard it calls. Bound from the <c>Sample</c> section.</summary>
public sealed class SampleOptions
{
    /// <summary>Gets or sets how long the worker calls before the host stops.</summary>
    public TimeSpan Duration { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>Gets or sets how many callers call at once.</summary>
    public int Callers { get; set; } = 6;

    /// <summary>Gets or sets how often metrics are printed.</summary>
    public TimeSpan MetricsInterval { get; set; } = TimeSpan.FromSeconds(5);
}
