using System.Collections.Concurrent;
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
/// The proxy's generated or hand-written operations read <c>Channel.Operation(...)</c>, so routing every call through
/// here makes lease per operation the behaviour of the drop-in with no change to the proxy's code.
/// </remarks>
#pragma warning disable CA1852 // DispatchProxy derives a generated type from this class, so it cannot be sealed.
internal class OperationChannel<TContract> : DispatchProxy
#pragma warning restore CA1852
    where TContract : class
{
    private static readonly ConcurrentDictionary<MethodInfo, Func<PooledClientBase<TContract>, object?[]?, object?>> Invokers = new();

    private PooledClientBase<TContract> _proxy = null!;

    public static TContract Create(PooledClientBase<TContract> proxy)
    {
        var channel = Create<TContract, OperationChannel<TContract>>();
        ((OperationChannel<TContract>)(object)channel)._proxy = proxy;
        return channel;
    }

    protected override object? Invoke(MethodInfo? targetMethod, object?[]? args)
    {
        ArgumentNullException.ThrowIfNull(targetMethod);
        return Invokers.GetOrAdd(targetMethod, static method => InvokerFor(method))(_proxy, args);
    }

    /// <summary>How a call of <paramref name="method"/> runs, decided once per method from its shape.</summary>
    private static Func<PooledClientBase<TContract>, object?[]?, object?> InvokerFor(MethodInfo method)
    {
        var returnType = method.ReturnType;
        if (returnType == typeof(Task))
        {
            return (proxy, args) => proxy.CallAsync<NoResult>(method, args);
        }

        if (returnType.IsGenericType && returnType.GetGenericTypeDefinition() == typeof(Task<>))
        {
            var callAsync = typeof(OperationChannel<TContract>)
                .GetMethod(nameof(CallAsync), BindingFlags.NonPublic | BindingFlags.Static)!
                .MakeGenericMethod(returnType.GetGenericArguments()[0])
                .CreateDelegate<Func<PooledClientBase<TContract>, MethodInfo, object?[]?, object?>>();
            return (proxy, args) => callAsync(proxy, method, args);
        }

        if (BeginEnd.TryMatch(method) is { } pair)
        {
            return pair.IsBegin
                ? (proxy, args) => proxy.BeginCall(pair.Begin, pair.End, args!)
                : (_, args) => PooledClientBase<TContract>.EndCall((IAsyncResult)args![0]!);
        }

        return (proxy, args) => proxy.Call(method, args);
    }

    private static Task<T> CallAsync<T>(PooledClientBase<TContract> proxy, MethodInfo method, object?[]? args) => proxy.CallAsync<T>(method, args);

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
