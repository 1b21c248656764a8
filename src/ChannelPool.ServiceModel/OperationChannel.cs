using System.ServiceModel;
using System.Collections.Concurrent;
using System.Linq.Expressions;
using System.Reflection;

namespace ChannelPool.ServiceModel;

/// <summary>
/// What <see cref="PooledClientBase{TContract}.Channel"/> returns: the contract, implemented so that each call leases a
/// channel when it starts and gives it back when it ends. A <c>Task</c> operation waits for its channel asynchronously;
/// a synchronous one blocks only its own thread, as WCF's own synchronous calls do; a <c>Begin</c>/<c>End</c> pair holds
/// its channel from the one to the other.
/// </summary>
/// <typeparam name="TContract">The service contract.</typeparam>
/// <remarks>
/// <para>
/// The proxy's generated or hand-written operations read <c>Channel.Operation(...)</c>, so routing every call through
/// here makes lease per operation the behaviour of the drop-in with no change to the proxy's code.
/// </para>
/// <para>
/// The whole call path is here, the proxy keeps its life cycle: a call's form is worked out once per method, the span
/// wraps the call, and one method per form, <c>CallOnLease</c> and <c>CallOnLeaseAsync</c>, takes the lease, calls the
/// channel and releases it. A <c>Task</c> call with nobody listening is one async step; the contract method is called
/// through <see cref="OperationInvoker{TContract}"/>, not <c>MethodInfo.Invoke</c>.
/// </para>
/// </remarks>
#pragma warning disable CA1852 // DispatchProxy derives a generated type from this class, so it cannot be sealed.
internal class OperationChannel<TContract> : DispatchProxy
#pragma warning restore CA1852
    where TContract : class
{
    private static readonly ConcurrentDictionary<MethodInfo, Func<OperationChannel<TContract>, object?[]?, object?>> Calls = new();

    private static Func<OperationChannel<TContract>>? _construct;

    private PooledClientBase<TContract> _proxy = null!;

    public static TContract Create(PooledClientBase<TContract> proxy)
    {
        OperationChannel<TContract> channel;
        if (Volatile.Read(ref _construct) is { } construct)
        {
            channel = construct();
        }
        else
        {
            channel = (OperationChannel<TContract>)(object)Create<TContract, OperationChannel<TContract>>();
            Volatile.Write(ref _construct, ConstructorLike(channel) ?? (static () => (OperationChannel<TContract>)(object)Create<TContract, OperationChannel<TContract>>()));
        }

        channel._proxy = proxy;
        return (TContract)(object)channel;
    }

    /// <summary>
    /// The generated type's constructor, compiled and given the method table the first instance got.
    /// <see cref="DispatchProxy.Create{T, TProxy}"/> finds the type under a lock and builds it through reflection, about
    /// 200 ns and 256 B more a proxy, which the proxy-per-call pattern pays on every call. Where the generated type is
    /// not laid out as expected, every proxy goes through Create.
    /// </summary>
    private static Func<OperationChannel<TContract>>? ConstructorLike(OperationChannel<TContract> first)
    {
        var type = first.GetType();
        if (type.GetConstructor([typeof(MethodInfo[])]) is not { } constructor
            || type.GetFields(BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public)
                .SingleOrDefault(field => field.FieldType == typeof(MethodInfo[])) is not { } table
            || table.GetValue(first) is not MethodInfo[] methods)
        {
            return null;
        }

        try
        {
            var construct = Expression.Lambda<Func<OperationChannel<TContract>>>(Expression.New(constructor, Expression.Constant(methods))).Compile();
            return construct().GetType() == type ? construct : null; // tried once here, so a refusal cannot reach a call
        }
        catch (Exception ex) when (ex is ArgumentException or InvalidOperationException or MemberAccessException or NotSupportedException)
        {
            return null;
        }
    }

    protected override object? Invoke(MethodInfo? targetMethod, object?[]? args)
    {
        ArgumentNullException.ThrowIfNull(targetMethod);
        return Calls.GetOrAdd(targetMethod, static method => CallFor(method))(this, args);
    }

    /// <summary>How a call of <paramref name="method"/> runs, decided once per method from its shape.</summary>
    private static Func<OperationChannel<TContract>, object?[]?, object?> CallFor(MethodInfo method)
    {
        var returnType = method.ReturnType;
        if (returnType == typeof(Task))
        {
            var operation = new Operation(method, OperationInvoker<TContract>.For(method));
            return (self, args) => self.CallAsync<NoResult>(operation, args);
        }

        if (returnType.IsGenericType && returnType.GetGenericTypeDefinition() == typeof(Task<>))
        {
            var operation = new Operation(method, OperationInvoker<TContract>.For(method));
            var callAsync = typeof(OperationChannel<TContract>)
                .GetMethod(nameof(CallAsyncOf), BindingFlags.NonPublic | BindingFlags.Static)!
                .MakeGenericMethod(returnType.GetGenericArguments()[0])
                .CreateDelegate<Func<OperationChannel<TContract>, Operation, object?[]?, object?>>();
            return (self, args) => callAsync(self, operation, args);
        }

        if (BeginEnd.TryMatch(method) is { } pair)
        {
            if (!pair.IsBegin)
            {
                return static (_, args) => TaskToAsyncResult.End<object?>((IAsyncResult)args![0]!);
            }

            var begin = OperationInvoker<TContract>.For(pair.Begin);
            var end = OperationInvoker<TContract>.For(pair.End);

            // The pair runs as one Task call: its channel is held from Begin until End's result is known.
            var operation = new Operation(pair.Begin, (channel, args) => BeginEndAsync(channel, begin, end, args!));
            return (self, args) => TaskToAsyncResult.Begin(
                self.CallAsync<object?>(operation, args![..^2]), (AsyncCallback?)args[^2], args[^1]);
        }

        var synchronous = new Operation(method, OperationInvoker<TContract>.For(method));
        return (self, args) => self.Call(synchronous, args);
    }

    private static Task<T> CallAsyncOf<T>(OperationChannel<TContract> self, Operation operation, object?[]? args) => self.CallAsync<T>(operation, args);

    /// <summary>A synchronous operation: leases (blocking this thread while the pool is empty), calls, releases.</summary>
    private object? Call(Operation operation, object?[]? args)
    {
        var span = _proxy.StartSpan(operation.Method);
        try
        {
            var result = _proxy.HoldsChannel() ? CallOnHeldChannel(operation, args, span) : CallOnLease(operation, args, span);
            span.Stop(error: null);
            return result;
        }
        catch (Exception ex)
        {
            span.Stop(ex);
            throw;
        }
    }

    /// <summary>
    /// A <c>Task</c> operation: awaits a lease, awaits the call, releases once the call's outcome is recorded. With
    /// nobody listening it runs in one async step, the lease's own; the span's step is taken only while someone listens.
    /// </summary>
    private Task<T> CallAsync<T>(Operation operation, object?[]? args) =>
        CallTelemetry.IsListening ? TracedAsync<T>(operation, args)
        : _proxy.HoldsChannel() ? CallOnHeldChannelAsync<T>(operation, args, default)
        : CallOnLeaseAsync<T>(operation, args, default);

    private async Task<T> TracedAsync<T>(Operation operation, object?[]? args)
    {
        var span = _proxy.StartSpan(operation.Method);
        try
        {
            var result = await (_proxy.HoldsChannel() ? CallOnHeldChannelAsync<T>(operation, args, span) : CallOnLeaseAsync<T>(operation, args, span))
                .ConfigureAwait(false);
            span.Stop(error: null);
            return result;
        }
        catch (Exception ex)
        {
            span.Stop(ex);
            throw;
        }
    }

    // The two places a call meets a leased channel: the lease is taken, the channel called, the lease released with
    // the call's outcome recorded on the channel. On a pool over several addresses, a call that failed before anything
    // was sent is made again on a lease at another address (see NotSent); any other failure goes to the caller.
    private object? CallOnLease(Operation operation, object?[]? args, CallSpan span)
    {
        var pool = _proxy.StartUsing();
        var lease = pool.Acquire();
        for (var attempt = 1; ; attempt++)
        {
            PoolAddress? failedAt = null;
            try
            {
                var channel = FailureTrackingChannel<TContract>.Of(lease.Channel);
                span.Acquired(lease.ChannelId, channel);
                return channel.Call(operation.Invoke, args);
            }
            catch (Exception ex) when (MayRetryElsewhere(pool, lease, ex, attempt, out failedAt))
            {
                // Released below, broken: the address counts one more failure towards its ejection.
            }
            finally
            {
                _proxy.EndOperation(lease);
            }

            lease = ((BalancedChannelPool<TContract>)pool).AcquireElsewhere(failedAt);
        }
    }

    private async Task<T> CallOnLeaseAsync<T>(Operation operation, object?[]? args, CallSpan span)
    {
        var pool = _proxy.StartUsing();
        var lease = await pool.AcquireAsync().ConfigureAwait(false);
        for (var attempt = 1; ; attempt++)
        {
            PoolAddress? failedAt = null;
            try
            {
                var channel = FailureTrackingChannel<TContract>.Of(lease.Channel);
                span.Acquired(lease.ChannelId, channel);
                var task = (Task)channel.Call(operation.Invoke, args)!;
                try
                {
                    if (task is Task<T> typed)
                    {
                        return await typed.ConfigureAwait(false);
                    }

                    await task.ConfigureAwait(false);
                    return default!;
                }
                catch (Exception ex) when (channel.Observe(ex))
                {
                    throw; // Observe always returns false: the failure is recorded before the lease is released.
                }
            }
            catch (Exception ex) when (MayRetryElsewhere(pool, lease, ex, attempt, out failedAt))
            {
                // Released below, broken: the address counts one more failure towards its ejection.
            }
            finally
            {
                _proxy.EndOperation(lease);
            }

            lease = await ((BalancedChannelPool<TContract>)pool).AcquireElsewhereAsync(failedAt).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Whether a failed call goes again on another address: the pool balances several, an address is left to try, and
    /// the failure shows nothing was sent. Runs as an exception filter, before the lease is released.
    /// </summary>
    private static bool MayRetryElsewhere(IChannelPool<TContract> pool, ChannelLease<TContract> lease, Exception error, int attempt, out PoolAddress? failedAt)
    {
        failedAt = null;
        if (pool is not BalancedChannelPool<TContract> balanced || !NotSent(error) || attempt >= Math.Min(3, Math.Max(2, balanced.Configured.Count)))
        {
            return false;
        }

        failedAt = balanced.AddressOf(lease);
        return failedAt is not null;
    }

    /// <summary>
    /// A failure that shows the request never reached a service: the connection could not be made (refused, no route,
    /// name not found: WCF's HTTP transport wraps the handler's connection error), no endpoint listens there
    /// (<see cref="EndpointNotFoundException"/>), or the channel had faulted before the call began
    /// (<see cref="CommunicationObjectFaultedException"/>). Anything else may have reached the service, and a call that
    /// may have run there is never repeated by the pool; an idempotent operation can be retried by the caller's own
    /// policy (Polly).
    /// </summary>
    internal static bool NotSent(Exception error)
    {
        if (error is EndpointNotFoundException or CommunicationObjectFaultedException)
        {
            return true;
        }

        for (var inner = error; inner is not null; inner = inner.InnerException)
        {
            switch (inner)
            {
                case System.Net.Http.HttpRequestException { HttpRequestError: System.Net.Http.HttpRequestError.ConnectionError or System.Net.Http.HttpRequestError.NameResolutionError }:
                case System.Net.Sockets.SocketException
                {
                    SocketErrorCode: System.Net.Sockets.SocketError.ConnectionRefused or System.Net.Sockets.SocketError.HostUnreachable
                        or System.Net.Sockets.SocketError.NetworkUnreachable or System.Net.Sockets.SocketError.HostNotFound,
                }:
                    return true;
            }
        }

        return false;
    }

    // A call on the channel the proxy holds for its life (a session, or InnerChannel pinned it).
    private object? CallOnHeldChannel(Operation operation, object?[]? args, CallSpan span)
    {
        var held = _proxy.HoldBlocking(CancellationToken.None);
        span.Acquired(held.ChannelId, held.Channel);
        held.EnterCall();
        try
        {
            return held.Channel.Call(operation.Invoke, args);
        }
        finally
        {
            held.ExitCall();
        }
    }

    private async Task<T> CallOnHeldChannelAsync<T>(Operation operation, object?[]? args, CallSpan span)
    {
        var held = await _proxy.HoldAsync(CancellationToken.None).ConfigureAwait(false);
        span.Acquired(held.ChannelId, held.Channel);
        held.EnterCall();
        try
        {
            var task = (Task)held.Channel.Call(operation.Invoke, args)!;
            try
            {
                if (task is Task<T> typed)
                {
                    return await typed.ConfigureAwait(false);
                }

                await task.ConfigureAwait(false);
                return default!;
            }
            catch (Exception ex) when (held.Channel.Observe(ex))
            {
                throw;
            }
        }
        finally
        {
            held.ExitCall();
        }
    }

    private static async Task<object?> BeginEndAsync(
        TContract channel, Func<TContract, object?[]?, object?> begin, Func<TContract, object?[]?, object?> end, object?[] inputs)
    {
        var completed = new TaskCompletionSource<IAsyncResult>(TaskCreationOptions.RunContinuationsAsynchronously);
        object?[] beginArgs = [.. inputs, (AsyncCallback)(result => completed.TrySetResult(result)), null];
        begin(channel, beginArgs);
        var result = await completed.Task.ConfigureAwait(false);
        return end(channel, [result]);
    }

    /// <summary>A method of the contract, with its call compiled once (<see cref="OperationInvoker{TContract}"/>).</summary>
    /// <param name="Method">The method the caller called: it names the span.</param>
    /// <param name="Invoke">Calls it on a real channel.</param>
    private sealed record Operation(MethodInfo Method, Func<TContract, object?[]?, object?> Invoke);

    /// <summary>Stands for the result of an operation that returns a plain <see cref="Task"/>.</summary>
    internal readonly struct NoResult;

    /// <summary>
    /// The asynchronous programming model's pair: <c>IAsyncResult BeginX(…, AsyncCallback, object)</c> and
    /// <c>EndX(IAsyncResult)</c>, found by name on the contract as WCF pairs them.
    /// </summary>
    private sealed record BeginEnd(MethodInfo Begin, MethodInfo End, bool IsBegin)
    {
        public static BeginEnd? TryMatch(MethodInfo method)
        {
            var parameters = method.GetParameters();
            if (method.Name.StartsWith("Begin", StringComparison.Ordinal)
                && method.ReturnType == typeof(IAsyncResult)
                && parameters is [.., { ParameterType: var callback }, { ParameterType: var state }]
                && callback == typeof(AsyncCallback) && state == typeof(object))
            {
                return FindPartner(method, "End" + method.Name[5..]) is { } end ? new BeginEnd(method, end, IsBegin: true) : null;
            }

            if (method.Name.StartsWith("End", StringComparison.Ordinal) && parameters is [{ ParameterType: var result }] && result == typeof(IAsyncResult))
            {
                return FindPartner(method, "Begin" + method.Name[3..]) is { } begin ? new BeginEnd(begin, method, IsBegin: false) : null;
            }

            if (method.Name.StartsWith("End", StringComparison.Ordinal) && parameters is [{ ParameterType: var first }, ..] && first == typeof(IAsyncResult))
            {
                throw new NotSupportedException(
                    $"{method.DeclaringType?.Name}.{method.Name} has out or ref parameters after its IAsyncResult; a pooled proxy does not support them. Use the operation's Task-based form.");
            }

            return null;
        }

        private static MethodInfo? FindPartner(MethodInfo method, string name) =>
            method.DeclaringType?.GetMethods().FirstOrDefault(candidate => candidate.Name == name);
    }
}
