using System.Collections.Concurrent;
using System.Linq.Expressions;
using System.Reflection;

namespace ChannelPool.ServiceModel;

/// <summary>
/// Calls a method of the contract on a real WCF channel through a delegate compiled once per method:
/// <c>MethodInfo.Invoke</c> checks and copies every argument on every call. Out and ref values are written back into
/// the argument array, as <c>MethodInfo.Invoke</c> writes them, and an exception reaches the caller unwrapped.
/// </summary>
/// <typeparam name="TContract">The service contract.</typeparam>
internal static class OperationInvoker<TContract>
    where TContract : class
{
    private static readonly ConcurrentDictionary<MethodInfo, Func<TContract, object?[]?, object?>> Invokers = new();

    private static readonly MethodInfo ArgumentOf = typeof(OperationInvoker<TContract>).GetMethod(nameof(Argument), BindingFlags.NonPublic | BindingFlags.Static)!;

    /// <summary>Gets the compiled call of <paramref name="method"/>, compiling it at its first use.</summary>
    /// <param name="method">A method of the contract or of an interface it extends.</param>
    /// <returns>A delegate that calls <paramref name="method"/> on a channel with an argument array.</returns>
    public static Func<TContract, object?[]?, object?> For(MethodInfo method) => Invokers.GetOrAdd(method, Compile);

    private static Func<TContract, object?[]?, object?> Compile(MethodInfo method)
    {
        var channel = Expression.Parameter(typeof(TContract), "channel");
        var args = Expression.Parameter(typeof(object[]), "args");
        var parameters = method.GetParameters();
        var locals = new List<ParameterExpression>();
        var before = new List<Expression>();
        var after = new List<Expression>();
        var arguments = new Expression[parameters.Length];
        for (var i = 0; i < parameters.Length; i++)
        {
            var parameter = parameters[i];
            var slot = Expression.ArrayAccess(args, Expression.Constant(i));
            if (!parameter.ParameterType.IsByRef)
            {
                arguments[i] = Read(slot, parameter.ParameterType);
                continue;
            }

            // A by-reference argument is a local the call writes, copied back into its slot afterwards.
            var type = parameter.ParameterType.GetElementType()!;
            var local = Expression.Variable(type, parameter.Name);
            locals.Add(local);
            before.Add(Expression.Assign(local, parameter.IsOut ? Expression.Default(type) : Read(slot, type)));
            after.Add(Expression.Assign(slot, Expression.Convert(local, typeof(object))));
            arguments[i] = local;
        }

        var call = Expression.Call(Expression.Convert(channel, method.DeclaringType!), method, arguments);
        var result = Expression.Variable(typeof(object), "result");
        var body = Expression.Block(
            typeof(object),
            [.. locals, result],
            [
                .. before,
                method.ReturnType == typeof(void) ? call : Expression.Assign(result, Expression.Convert(call, typeof(object))),
                .. after,
                result,
            ]);
        return Expression.Lambda<Func<TContract, object?[]?, object?>>(body, channel, args).Compile();
    }

    // A value type's null argument reads as its default, as MethodInfo.Invoke reads it.
    private static Expression Read(Expression slot, Type type) =>
        type.IsValueType ? Expression.Call(ArgumentOf.MakeGenericMethod(type), slot) : Expression.Convert(slot, type);

    private static T Argument<T>(object? value) => value is null ? default! : (T)value;
}
