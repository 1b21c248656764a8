using Microsoft.CodeAnalysis;

namespace ChannelPool.ServiceModel.Generators;

/// <summary>Every diagnostic the generator and the analyzer report. AnalyzerReleases.Unshipped.md lists them too.</summary>
internal static class Descriptors
{
    private const string Category = "ChannelPool.ServiceModel";

    public static readonly DiagnosticDescriptor SessionContractSharesChannels = new(
        "CPSM001",
        "A contract that requires sessions cannot share channels",
        "'{0}' requires sessions (SessionMode.Required), so its pooled channels cannot be shared, but MaxLeasesPerChannel is {1}: " +
        "callers sharing a channel would share one server-side session and see each other's state. Keep MaxLeasesPerChannel at 1 for this contract.",
        Category,
        DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor DuplexContract = new(
        "CPSM002",
        "A duplex contract cannot be pooled",
        "'{0}' is a duplex contract (its callback contract is '{1}'), which ChannelPool cannot pool: a pooled channel serves one caller after another, " +
        "but a callback channel belongs to one client's InstanceContext, so callbacks would reach the wrong caller. Use DuplexClientBase<T> or DuplexChannelFactory<T> for this contract.",
        Category,
        DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor ChannelKept = new(
        "CPSM003",
        "A pooled proxy must not keep Channel across calls",
        "'{0}' keeps Channel in '{1}'. Channel belongs to this proxy and fails once the proxy closes, so a kept reference outlives what it calls through. " +
        "Read Channel in each call instead.",
        Category,
        DiagnosticSeverity.Warning,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor SynchronousOperationInAsyncMethod = new(
        "CPSM004",
        "An asynchronous method of a pooled proxy calls a synchronous operation",
        "'{0}' calls the synchronous operation '{1}' through Channel inside an asynchronous method: it blocks a thread while it waits for a channel and for the reply, " +
        "and enough such callers starve the thread pool. Call the operation's Task-based form instead.",
        Category,
        DiagnosticSeverity.Warning,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor InnerChannelInAsyncMethod = new(
        "CPSM005",
        "An asynchronous method of a pooled proxy reads InnerChannel",
        "'{0}' reads InnerChannel inside an asynchronous method: it pins a channel to the proxy, leasing it with a blocking wait. " +
        "Call the Task-based operations through Channel, which lease without blocking, or await OpenAsync() before reading it.",
        Category,
        DiagnosticSeverity.Warning,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor NotPartial = new(
        "CPSM010",
        "A [PooledClient] class must be partial",
        "'{0}' has [PooledClient] but is not partial, so the generator cannot add its members. Declare it 'partial class {0}'{1}.",
        Category,
        DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor NotPooledClient = new(
        "CPSM011",
        "A [PooledClient] class must derive from PooledClientBase<TContract>",
        "'{0}' has [PooledClient] but does not derive from PooledClientBase<TContract>. Derive it from PooledClientBase<TContract> of your service contract, for example 'partial class {0} : PooledClientBase<IOrders>'.",
        Category,
        DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor NotAClientOfTheContract = new(
        "CPSM012",
        "The generated client must be a ClientBase<TContract> of the same contract",
        "[PooledClient(typeof({1}))] on '{0}': '{1}' is not a client of '{2}'. Name the client dotnet-svcutil generated for '{2}', a class derived from ClientBase<{2}>.",
        Category,
        DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor ClientNotReachable = new(
        "CPSM013",
        "The generated client must be a partial class of this project",
        "'{0}' cannot mirror '{1}': {2}. The generator adds a part to the generated client to reach its private GetBindingForEndpoint, GetEndpointAddress and ConfigureEndpoint, " +
        "so the client must be a partial class compiled in this project (as dotnet-svcutil writes it).",
        Category,
        DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor OperationHidesBaseMember = new(
        "CPSM014",
        "An operation shares its name with a PooledClientBase member",
        "'{1}' of '{2}' has the name of a member of PooledClientBase, so '{0}' implements it explicitly. Call it through the '{2}' interface.",
        Category,
        DiagnosticSeverity.Warning,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor NotAServiceContract = new(
        "CPSM015",
        "The contract must be a [ServiceContract] interface",
        "'{0}' pools '{1}', which is not an interface marked [ServiceContract]. A pooled WCF client needs a service contract interface.",
        Category,
        DiagnosticSeverity.Error,
        isEnabledByDefault: true);
}
