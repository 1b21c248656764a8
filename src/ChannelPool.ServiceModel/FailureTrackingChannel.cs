using System.Collections.Concurrent;
using System.Diagnostics;
using System.Reflection;
using System.ServiceModel;

namespace ChannelPool.ServiceModel;

/// <summary>
/// Wraps a WCF client channel so that a call failing with a transport or timeout error marks the channel broken.
/// The pool then never hands it out again, even where WCF leaves it <see cref="CommunicationState.Opened"/> (HTTP
/// channels stay open after a failed request).
/// </summary>
/// <typeparam name="TContract">The service contract.</typeparam>
/// <remarks>
/// A <see cref="DispatchProxy"/> is the one place every call passes through whether the caller is a
/// <see cref="PooledClientBase{TContract}"/> or code using a lease directly. It adds about 0.11 µs and 152 bytes to
/// an asynchronous call, two thirds of it the task wrapper that records a failure before the caller resumes; a net.tcp
/// call with TLS takes about 45 µs of client CPU (measured 2026-11-23, docs/performance.md).
/// </remarks>
#pragma warning disable CA1852 // DispatchProxy derives a generated type from this class, so it cannot be sealed.
internal class FailureTrackingChannel<TContract> : DispatchProxy
#pragma warning restore CA1852
    where TContract : class
{
    private static readonly ConcurrentDictionary<Type, Func<Task, FailureTrackingChannel<TContract>, Task>> TaskTrackers = new();

    /// <summary>
    /// How long a channel must have been idle before a lease probes its connection: a channel used within this window
    /// is taken to be alive, so a busy pool makes no system call per lease (HikariCP's bypass window is the same 500 ms).
    /// </summary>
    internal static readonly TimeSpan ProbeAfterIdle = TimeSpan.FromMilliseconds(500);

    private TContract _inner = null!;
    private volatile bool _broken;
    private Exception? _failure;
    private TimeProvider _time = TimeProvider.System;
    private SessionProbe _probe = null!;
    private long _lastUsed;

    /// <summary>Gets the real WCF channel.</summary>
    public TContract Inner => _inner;

    /// <summary>Gets the real channel as a communication object, for open, close, abort and state.</summary>
    public ICommunicationObject Communication { get; private set; } = null!;

    /// <summary>Gets whether a failed call broke the channel.</summary>
    public bool IsBroken => _broken;

    /// <summary>Gets the error of the call that broke the channel, for the pool's fatal-error rule.</summary>
    public Exception? Failure => Volatile.Read(ref _failure);

    /// <summary>Gets whether the channel is known to be unusable, without probing its connection.</summary>
    public bool IsKnownUnusable => _broken || Communication.State != CommunicationState.Opened;

    /// <summary>
    /// Gets whether the channel may carry calls: opened, no call on it failed for transport reasons, and, if it has been
    /// idle a while, its connection is still there (see <see cref="SessionProbe"/>).
    /// </summary>
    public bool IsUsable
    {
        get
        {
            if (_broken || Communication.State != CommunicationState.Opened)
            {
                return false;
            }

            if (_time.GetElapsedTime(Volatile.Read(ref _lastUsed)) < ProbeAfterIdle)
            {
                return true;
            }

            if (_probe.IsConnectionLost(_inner))
            {
                _broken = true;
                return false;
            }

            return true;
        }
    }

    /// <summary>Gets what the factory that opened the channel keeps with it: the channel factory it came from.</summary>
    public object? Owner { get; private set; }

    /// <summary>Gets when the open finished, as a <see cref="Stopwatch"/> timestamp, for a call's telemetry.</summary>
    public long OpenedAt { get; private set; }

    /// <summary>Gets how long the open took.</summary>
    public TimeSpan OpenDuration { get; private set; }

    /// <summary>Gets the context of the activity the channel was opened under, the pool's <c>channelpool.channel.open</c> span.</summary>
    public ActivityContext OpenedBy { get; private set; }

    public static TContract Wrap(TContract channel, TimeProvider time, SessionProbe probe, object? owner = null, long openStartedAt = 0)
    {
        var proxy = Create<TContract, FailureTrackingChannel<TContract>>();
        var tracker = (FailureTrackingChannel<TContract>)(object)proxy;
        tracker._inner = channel;
        tracker.Communication = (ICommunicationObject)channel;
        tracker._time = time;
        tracker._probe = probe;
        tracker._lastUsed = time.GetTimestamp();
        tracker.Owner = owner;
        tracker.OpenedAt = Stopwatch.GetTimestamp();
        tracker.OpenDuration = openStartedAt == 0 ? TimeSpan.Zero : Stopwatch.GetElapsedTime(openStartedAt, tracker.OpenedAt);
        tracker.OpenedBy = Activity.Current?.Context ?? default;
        return proxy;
    }

    public static FailureTrackingChannel<TContract> Of(TContract channel) =>
        channel as FailureTrackingChannel<TContract>
        ?? throw new ArgumentException(
            $"The channel was not opened by a {nameof(ServiceModelChannelFactory<TContract>)}; only its channels can be pooled.", nameof(channel));

    /// <summary>Says whether <paramref name="exception"/> means the channel must not carry another call.</summary>
    /// <param name="exception">What a call threw.</param>
    /// <returns><see langword="false"/> for a <see cref="FaultException"/>: the service answered, the channel is fine.</returns>
    public static bool BreaksChannel(Exception exception) => exception switch
    {
        FaultException => false,
        CommunicationException or TimeoutException or ObjectDisposedException => true,
        _ => false,
    };

    public void MarkBroken() => _broken = true;

    /// <summary>
    /// Calls <paramref name="operation"/> on the real channel, recording a failure it throws at once. A task it returns
    /// is handed back as it is: the caller observes its outcome with <see cref="Observe"/> before it releases the lease.
    /// </summary>
    /// <param name="operation">A method of the contract.</param>
    /// <param name="args">Its arguments; out and ref values are written back here.</param>
    /// <returns>What the operation returned.</returns>
    internal object? Call(MethodInfo operation, object?[]? args) => Call(OperationInvoker<TContract>.For(operation), args);

    /// <summary>Calls an operation through its compiled invoker (<see cref="OperationInvoker{TContract}"/>); see <see cref="Call(MethodInfo, object?[])"/>.</summary>
    /// <param name="invoke">The operation's compiled call.</param>
    /// <param name="args">Its arguments; out and ref values are written back here.</param>
    /// <returns>What the operation returned.</returns>
    internal object? Call(Func<TContract, object?[]?, object?> invoke, object?[]? args)
    {
        try
        {
            return invoke(_inner, args);
        }
        catch (Exception ex) when (Observe(ex))
        {
            throw; // Observe always returns false: the filter records without catching, so the stack stays the caller's.
        }
        finally
        {
            Volatile.Write(ref _lastUsed, _time.GetTimestamp());
        }
    }

    protected override object? Invoke(MethodInfo? targetMethod, object?[]? args)
    {
        ArgumentNullException.ThrowIfNull(targetMethod);
        var result = Call(targetMethod, args);
        return result is Task { IsCompletedSuccessfully: false } task ? Track(task, targetMethod.ReturnType) : result;
    }

    /// <summary>Records <paramref name="exception"/> when it breaks the channel. Always false, for use in an exception filter.</summary>
    /// <param name="exception">What a call on this channel threw.</param>
    /// <returns><see langword="false"/>.</returns>
    internal bool Observe(Exception exception)
    {
        if (BreaksChannel(exception))
        {
            // Recorded before the flag, so whoever sees the channel broken also sees why.
            Interlocked.CompareExchange(ref _failure, exception, null);
            _broken = true;
        }

        return false;
    }

    // The caller gets a task that completes only after the failure is recorded, so a release that follows the caller's
    // await can never return a broken channel to the idle set.
    private Task Track(Task task, Type returnType)
    {
        var tracker = TaskTrackers.GetOrAdd(returnType, static type =>
        {
            if (!type.IsGenericType)
            {
                return static (task, self) => self.TrackAsync(task);
            }

            var method = typeof(FailureTrackingChannel<TContract>)
                .GetMethod(nameof(TrackResultAsync), BindingFlags.NonPublic | BindingFlags.Static)!
                .MakeGenericMethod(type.GetGenericArguments()[0]);
            return method.CreateDelegate<Func<Task, FailureTrackingChannel<TContract>, Task>>();
        });
        return tracker(task, this);
    }

    private async Task TrackAsync(Task task)
    {
        try
        {
            await task.ConfigureAwait(false);
        }
        catch (Exception ex) when (Observe(ex))
        {
            throw;
        }
    }

    private static async Task<T> TrackResultAsync<T>(Task task, FailureTrackingChannel<TContract> self)
    {
        try
        {
            return await ((Task<T>)task).ConfigureAwait(false);
        }
        catch (Exception ex) when (self.Observe(ex))
        {
            throw;
        }
    }
}
