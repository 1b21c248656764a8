using System.Diagnostics;

namespace ChannelPool;

/// <summary>
/// One lease under leak detection: when it began, and the stack of the code that acquired it. Exists only while
/// <see cref="ChannelPoolOptions.LeakDetectionThreshold"/> is set.
/// </summary>
/// <remarks>
/// The leak scan and the release race without a lock: each moves the watch out of <see cref="Active"/> with one atomic
/// step, so a lease is reported at most once, and its return is logged exactly when it was reported first.
/// </remarks>
internal sealed class LeaseWatch(StackTrace acquiredAt, long leasedAt)
{
    private const int Active = 0;

    // The shipped packages' assemblies, whose frames sit between the application and the lease.
    private static readonly HashSet<string> OwnAssemblies =
    [
        "ChannelPool", "ChannelPool.ServiceModel", "ChannelPool.Hosting", "ChannelPool.OpenTelemetry",
        "ChannelPool.PollingDuplex", "ChannelPool.PollingDuplex.Client", "ChannelPool.PollingDuplex.Protocol", "ChannelPool.PollingDuplex.Redis",
    ];
    private const int Reported = 1;
    private const int Returned = 2;

    private int _state;

    /// <summary>Gets the stack of the code that acquired the lease, captured when it asked.</summary>
    public StackTrace AcquiredAt { get; } = acquiredAt;

    /// <summary>Gets the precise timestamp the lease began.</summary>
    public long LeasedAt { get; } = leasedAt;

    /// <summary>Marks the lease reported; false when it was already reported or has come back.</summary>
    /// <returns>Whether this call is the one that reports it.</returns>
    public bool TryReport() => Interlocked.CompareExchange(ref _state, Reported, Active) == Active;

    /// <summary>Marks the lease returned.</summary>
    /// <returns>Whether it had been reported as a leak, so its return is worth a log line.</returns>
    public bool Return() => Interlocked.Exchange(ref _state, Returned) == Reported;

    /// <summary>Captures the caller's stack, without file and line lookups (the costly part) until it is formatted.</summary>
    /// <returns>The stack.</returns>
    public static StackTrace Capture() => new(skipFrames: 1, fNeedFileInfo: false);

    /// <summary>
    /// The acquiring stack as text, from the first frame of the application's code: frames of ChannelPool's own
    /// assemblies (a pooled proxy's, too), of generated proxy types, and of the runtime's async and reflection plumbing
    /// between them are left out.
    /// </summary>
    /// <returns>One frame per line.</returns>
    public string FormatAcquiringStack()
    {
        var frames = AcquiredAt.GetFrames();
        var first = Array.FindIndex(frames, static frame => !IsPlumbing(frame));
        return first <= 0 ? AcquiredAt.ToString() : new StackTrace(frames[first..]).ToString();
    }

    private static bool IsPlumbing(StackFrame frame)
    {
        if (frame.GetMethod()?.DeclaringType is not { } type)
        {
            return true;
        }

        var assembly = type.Assembly;
        return assembly.IsDynamic
            || OwnAssemblies.Contains(assembly.GetName().Name ?? "")
            || (assembly == typeof(object).Assembly && type.Namespace is "System.Runtime.CompilerServices" or "System.Reflection" or "System.Threading.Tasks");
    }
}
