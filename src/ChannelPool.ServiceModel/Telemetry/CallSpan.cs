using System.Diagnostics;

namespace ChannelPool.ServiceModel;

/// <summary>
/// One call's span and duration measurement, from the proxy's call until its result or exception. A default value
/// stands for a call nobody listens to, and costs nothing: no clock read, no allocation.
/// </summary>
/// <remarks>
/// The span's end time is set from the same elapsed time the histogram records, so the two agree exactly, as the RPC
/// conventions ask.
/// </remarks>
internal readonly struct CallSpan
{
    private static readonly object True = true;
    private static readonly object False = false;

    private readonly Activity? _activity;
    private readonly CallTarget? _target;
    private readonly long _startedAt;

    private CallSpan(Activity? activity, CallTarget target, long startedAt)
    {
        _activity = activity;
        _target = target;
        _startedAt = startedAt;
    }

    /// <summary>Starts the span of a call, a child of the caller's current activity.</summary>
    /// <param name="target">The operation and endpoint called.</param>
    /// <returns>The started span.</returns>
    public static CallSpan Start(CallTarget target)
    {
        var activity = CallTelemetry.Source.StartActivity(target.Method, ActivityKind.Client);
        if (activity is { IsAllDataRequested: true })
        {
            activity.SetTag("rpc.system.name", CallTelemetry.RpcSystem);
            activity.SetTag("rpc.method", target.Method);
            activity.SetTag("server.address", target.ServerAddress);
            activity.SetTag("server.port", target.BoxedPort);
        }

        return new CallSpan(activity, target, Stopwatch.GetTimestamp());
    }

    /// <summary>Records the pool's share of the call: the wait for a channel, the open it waited for, the channel.</summary>
    /// <param name="channelId">The pool-wide id of the channel, as on its <c>channelpool.channel.open</c> span.</param>
    /// <param name="channel">The channel that serves the call.</param>
    public void Acquired<TContract>(long channelId, FailureTrackingChannel<TContract> channel)
        where TContract : class
    {
        if (_activity is not { IsAllDataRequested: true } activity)
        {
            return;
        }

        activity.SetTag(ChannelPoolTelemetry.ChannelIdTag, channelId);
        activity.SetTag(CallTelemetry.AcquireDurationTag, Stopwatch.GetElapsedTime(_startedAt).TotalSeconds);

        // A channel whose open finished after the call began was opened while the call waited: FIFO hands it over.
        var waitedForOpen = channel.OpenedAt > _startedAt;
        activity.SetTag(CallTelemetry.WaitedForOpenTag, waitedForOpen ? True : False);
        if (waitedForOpen)
        {
            activity.SetTag(CallTelemetry.OpenDurationTag, channel.OpenDuration.TotalSeconds);
            if (channel.OpenedBy != default)
            {
                activity.AddLink(new ActivityLink(channel.OpenedBy));
            }
        }
    }

    /// <summary>Ends the span and records the duration; with <paramref name="error"/>, as a failure of that type.</summary>
    /// <param name="error">What the call threw, or <see langword="null"/> when it returned.</param>
    public void Stop(Exception? error)
    {
        if (_target is null)
        {
            return;
        }

        var elapsed = Stopwatch.GetElapsedTime(_startedAt);
        var errorType = error is null ? null : ErrorType(error.GetType());
        if (_activity is { } activity)
        {
            if (error is not null)
            {
                activity.SetStatus(ActivityStatusCode.Error, error.Message);
                activity.SetTag(ChannelPoolTelemetry.ErrorTypeTag, errorType);
            }

            activity.SetEndTime(activity.StartTimeUtc + elapsed);
            activity.Stop();
        }

        if (CallTelemetry.CallDuration.Enabled)
        {
            var tags = new TagList
            {
                { "rpc.system.name", CallTelemetry.RpcSystem },
                { "rpc.method", _target.Method },
                { "server.address", _target.ServerAddress },
                { "server.port", _target.BoxedPort },
            };
            if (errorType is not null)
            {
                tags.Add(ChannelPoolTelemetry.ErrorTypeTag, errorType);
            }

            CallTelemetry.CallDuration.Record(elapsed.TotalSeconds, tags);
        }
    }

    // A generic type's full name carries its arguments' assembly-qualified names; error.type wants few, short values.
    private static string? ErrorType(Type type) => type.IsGenericType ? type.GetGenericTypeDefinition().FullName : type.FullName;
}
