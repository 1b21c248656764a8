using System.Collections.Immutable;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.Diagnostics;
using Microsoft.CodeAnalysis.Operations;

namespace ChannelPool.ServiceModel.Generators;

/// <summary>
/// Reports, at build time, what a pooled WCF client cannot do: share the channels of a contract that requires sessions
/// (CPSM001), pool a duplex contract (CPSM002), or keep <c>Channel</c> across calls (CPSM003); and what blocks a thread
/// in an asynchronous method of a pooled proxy: a synchronous operation through <c>Channel</c> (CPSM004) or a read of
/// <c>InnerChannel</c> (CPSM005). The first two also fail at run time; this says so where the code is.
/// </summary>
[DiagnosticAnalyzer(LanguageNames.CSharp)]
public sealed class PooledClientAnalyzer : DiagnosticAnalyzer
{
    private const string MaxLeasesPerChannel = "MaxLeasesPerChannel";

    /// <inheritdoc />
    public override ImmutableArray<DiagnosticDescriptor> SupportedDiagnostics { get; } =
        ImmutableArray.Create(
            Descriptors.SessionContractSharesChannels, Descriptors.DuplexContract, Descriptors.ChannelKept,
            Descriptors.SynchronousOperationInAsyncMethod, Descriptors.InnerChannelInAsyncMethod);

    /// <inheritdoc />
    public override void Initialize(AnalysisContext context)
    {
        context.ConfigureGeneratedCodeAnalysis(GeneratedCodeAnalysisFlags.None);
        context.EnableConcurrentExecution();
        context.RegisterCompilationStartAction(start =>
        {
            var known = KnownTypes.From(start.Compilation);
            if (known.PooledClientBase is null)
            {
                return;
            }

            start.RegisterSymbolAction(symbol => AnalyzeProxyType(symbol, known), SymbolKind.NamedType);
            start.RegisterOperationAction(operation => AnalyzePoolCall(operation, known), OperationKind.Invocation, OperationKind.ObjectCreation);
            start.RegisterOperationAction(operation => AnalyzeChannelRead(operation, known), OperationKind.PropertyReference);
        });
    }

    private static void AnalyzeProxyType(SymbolAnalysisContext context, KnownTypes known)
    {
        // Reported on the class that derives from PooledClientBase<T> itself, not again on every class below it.
        var type = (INamedTypeSymbol)context.Symbol;
        if (type.BaseType is { } direct
            && SymbolEqualityComparer.Default.Equals(direct.OriginalDefinition, known.PooledClientBase)
            && known.CallbackContractOf(direct.TypeArguments[0]) is { } callback)
        {
            context.ReportDiagnostic(Diagnostic.Create(Descriptors.DuplexContract, type.Locations.FirstOrDefault(), direct.TypeArguments[0].ToDisplayString(), callback.ToDisplayString()));
        }
    }

    private static void AnalyzePoolCall(OperationAnalysisContext context, KnownTypes known)
    {
        var (method, arguments) = context.Operation switch
        {
            IInvocationOperation invocation => (invocation.TargetMethod, invocation.Arguments),
            IObjectCreationOperation { Constructor: { } constructor } creation => (constructor, creation.Arguments),
            _ => (null, ImmutableArray<IArgumentOperation>.Empty),
        };
        if (method is null || PooledContract(method, known) is not { } contract)
        {
            return;
        }

        if (known.CallbackContractOf(contract) is { } callback)
        {
            context.ReportDiagnostic(Diagnostic.Create(Descriptors.DuplexContract, context.Operation.Syntax.GetLocation(), contract.ToDisplayString(), callback.ToDisplayString()));
            return;
        }

        if (!known.RequiresSession(contract))
        {
            return;
        }

        foreach (var argument in arguments)
        {
            foreach (var (assignment, leases) in SharedLeaseSettings(argument.Value, known))
            {
                context.ReportDiagnostic(Diagnostic.Create(Descriptors.SessionContractSharesChannels, assignment.Syntax.GetLocation(), contract.ToDisplayString(), leases.ToString(System.Globalization.CultureInfo.InvariantCulture)));
            }
        }
    }

    /// <summary>
    /// The contract of a call that creates or configures a WCF pool: <c>ChannelPoolFactory&lt;T&gt;</c>,
    /// <c>ServiceChannelPool&lt;T&gt;</c>, <c>AddChannelPool&lt;T&gt;</c>/<c>AddPooledClient&lt;T, TProxy&gt;</c> and
    /// <c>ChannelPoolBuilder&lt;T&gt;.Configure</c> when T is a service contract.
    /// </summary>
    private static ITypeSymbol? PooledContract(IMethodSymbol method, KnownTypes known)
    {
        var container = method.ContainingType.OriginalDefinition;
        if (SymbolEqualityComparer.Default.Equals(container, known.ChannelPoolFactory)
            || SymbolEqualityComparer.Default.Equals(container, known.ServiceChannelPool)
            || (SymbolEqualityComparer.Default.Equals(container, known.ChannelPoolBuilder) && method.Name == "Configure"))
        {
            var contract = method.ContainingType.TypeArguments[0];
            return known.ServiceContractOf(contract) is null ? null : contract;
        }

        return SymbolEqualityComparer.Default.Equals(container, known.ServiceCollectionExtensions) && method.TypeArguments.Length > 0
            ? method.TypeArguments[0]
            : null;
    }

    /// <summary>
    /// Finds <c>MaxLeasesPerChannel = N</c> with a constant N above 1 in what a pool call receives: an object initializer,
    /// a local set up in the same method, or the body of a <c>Configure(o =&gt; ...)</c> lambda.
    /// </summary>
    private static IEnumerable<(IOperation Assignment, int Leases)> SharedLeaseSettings(IOperation value, KnownTypes known)
    {
        while (value is IConversionOperation conversion)
        {
            value = conversion.Operand;
        }

        IEnumerable<IOperation> scope = value switch
        {
            IObjectCreationOperation { Initializer: { } initializer } => initializer.Descendants(),
            IDelegateCreationOperation { Target: IAnonymousFunctionOperation lambda } => lambda.Body.Descendants(),
            ILocalReferenceOperation local => LocalSetUp(local),
            _ => [],
        };

        foreach (var operation in scope)
        {
            if (operation is ISimpleAssignmentOperation { Target: IPropertyReferenceOperation property } assignment
                && ConstantInt(assignment.Value) is > 1 and var leases
                && property.Property.Name == MaxLeasesPerChannel
                && SymbolEqualityComparer.Default.Equals(property.Property.ContainingType, known.ChannelPoolOptions)
                && (value is not ILocalReferenceOperation local || Targets(property, local.Local)))
            {
                yield return (operation, leases);
            }
        }
    }

    // The option is an int?, so a constant reaches it through an implicit conversion, which carries no constant value.
    private static int? ConstantInt(IOperation value)
    {
        while (value is IConversionOperation { ConstantValue.HasValue: false } conversion)
        {
            value = conversion.Operand;
        }

        return value.ConstantValue is { HasValue: true, Value: int constant } ? constant : null;
    }

    private static IEnumerable<IOperation> LocalSetUp(ILocalReferenceOperation local)
    {
        var root = (IOperation)local;
        while (root.Parent is not null)
        {
            root = root.Parent;
        }

        return root.Descendants();
    }

    private static bool Targets(IPropertyReferenceOperation property, ILocalSymbol local) =>
        property.Instance switch
        {
            ILocalReferenceOperation reference => SymbolEqualityComparer.Default.Equals(reference.Local, local),
            IInstanceReferenceOperation { ReferenceKind: InstanceReferenceKind.ImplicitReceiver } => InitializesLocal(property, local),
            _ => false,
        };

    // An object initializer's member is set on an implicit receiver: it counts when that initializer creates the local.
    private static bool InitializesLocal(IOperation operation, ILocalSymbol local)
    {
        for (var parent = operation.Parent; parent is not null; parent = parent.Parent)
        {
            switch (parent)
            {
                case IVariableDeclaratorOperation declarator:
                    return SymbolEqualityComparer.Default.Equals(declarator.Symbol, local);
                case ISimpleAssignmentOperation { Target: ILocalReferenceOperation target }:
                    return SymbolEqualityComparer.Default.Equals(target.Local, local);
            }
        }

        return false;
    }

    private static void AnalyzeChannelRead(OperationAnalysisContext context, KnownTypes known)
    {
        var read = (IPropertyReferenceOperation)context.Operation;
        if (read.Property.Name is not ("Channel" or "InnerChannel")
            || !SymbolEqualityComparer.Default.Equals(read.Property.ContainingType.OriginalDefinition, known.PooledClientBase))
        {
            return;
        }

        var proxyName = context.ContainingSymbol.ContainingType?.Name ?? string.Empty;
        if (read.Property.Name == "InnerChannel")
        {
            if (IsInAsynchronousFunction(read, context.ContainingSymbol))
            {
                context.ReportDiagnostic(Diagnostic.Create(Descriptors.InnerChannelInAsyncMethod, read.Syntax.GetLocation(), proxyName));
            }

            return;
        }

        var value = (IOperation)read;
        while (value.Parent is IConversionOperation or IParenthesizedOperation)
        {
            value = value.Parent;
        }

        if (value.Parent is IInvocationOperation call
            && call.Instance == value
            && !IsAsynchronousPattern(call.TargetMethod.ReturnType)
            && IsInAsynchronousFunction(read, context.ContainingSymbol))
        {
            context.ReportDiagnostic(Diagnostic.Create(Descriptors.SynchronousOperationInAsyncMethod, call.Syntax.GetLocation(), proxyName, call.TargetMethod.Name));
            return;
        }

        if (value.Parent is IAssignmentOperation assignment
            && assignment.Value == value
            && assignment.Target is IFieldReferenceOperation or IPropertyReferenceOperation)
        {
            var kept = assignment.Target switch
            {
                IFieldReferenceOperation field => field.Field.Name,
                IPropertyReferenceOperation property => property.Property.Name,
                _ => string.Empty,
            };
            context.ReportDiagnostic(Diagnostic.Create(Descriptors.ChannelKept, assignment.Syntax.GetLocation(), context.ContainingSymbol.ContainingType?.Name ?? string.Empty, kept));
        }
    }

    /// <summary>Whether the code runs in a function that is async or hands back a task: a lambda's, or else the member's.</summary>
    private static bool IsInAsynchronousFunction(IOperation operation, ISymbol containing)
    {
        for (var parent = operation.Parent; parent is not null; parent = parent.Parent)
        {
            if (parent is IAnonymousFunctionOperation lambda)
            {
                return IsAsynchronous(lambda.Symbol);
            }

            if (parent is ILocalFunctionOperation local)
            {
                return IsAsynchronous(local.Symbol);
            }
        }

        return containing is IMethodSymbol method && IsAsynchronous(method);
    }

    private static bool IsAsynchronous(IMethodSymbol method) => method.IsAsync || IsTask(method.ReturnType);

    private static bool IsAsynchronousPattern(ITypeSymbol returnType) =>
        IsTask(returnType) || returnType.ToDisplayString() == "System.IAsyncResult";

    private static bool IsTask(ITypeSymbol type) =>
        type.OriginalDefinition.ToDisplayString() is "System.Threading.Tasks.Task" or "System.Threading.Tasks.Task<TResult>"
            or "System.Threading.Tasks.ValueTask" or "System.Threading.Tasks.ValueTask<TResult>";
}
