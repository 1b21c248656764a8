using Microsoft.CodeAnalysis;

namespace ChannelPool.ServiceModel.Generators;

/// <summary>The types the generator and the analyzer look for, resolved once per compilation.</summary>
internal sealed class KnownTypes
{
    public const string PooledClientAttributeName = "ChannelPool.ServiceModel.PooledClientAttribute";

    private KnownTypes(Compilation compilation)
    {
        PooledClientBase = compilation.GetTypeByMetadataName("ChannelPool.ServiceModel.PooledClientBase`1");
        ServiceChannelPool = compilation.GetTypeByMetadataName("ChannelPool.ServiceModel.ServiceChannelPool`1");
        ChannelPoolFactory = compilation.GetTypeByMetadataName("ChannelPool.ServiceModel.ChannelPoolFactory`1");
        ServiceCollectionExtensions = compilation.GetTypeByMetadataName("Microsoft.Extensions.DependencyInjection.ServiceChannelPoolServiceCollectionExtensions");
        ChannelPoolBuilder = compilation.GetTypeByMetadataName("Microsoft.Extensions.DependencyInjection.ChannelPoolBuilder`1");
        ChannelPoolOptions = compilation.GetTypeByMetadataName("ChannelPool.ChannelPoolOptions");
        ClientBase = compilation.GetTypeByMetadataName("System.ServiceModel.ClientBase`1");
        ServiceContractAttribute = compilation.GetTypeByMetadataName("System.ServiceModel.ServiceContractAttribute");
        ActivatorUtilitiesConstructor = compilation.GetTypeByMetadataName("Microsoft.Extensions.DependencyInjection.ActivatorUtilitiesConstructorAttribute");
    }

    public INamedTypeSymbol? PooledClientBase { get; }

    public INamedTypeSymbol? ServiceChannelPool { get; }

    public INamedTypeSymbol? ChannelPoolFactory { get; }

    public INamedTypeSymbol? ServiceCollectionExtensions { get; }

    public INamedTypeSymbol? ChannelPoolBuilder { get; }

    public INamedTypeSymbol? ChannelPoolOptions { get; }

    public INamedTypeSymbol? ClientBase { get; }

    public INamedTypeSymbol? ServiceContractAttribute { get; }

    public INamedTypeSymbol? ActivatorUtilitiesConstructor { get; }

    public static KnownTypes From(Compilation compilation) => new(compilation);

    /// <summary>The contract of a class derived from <c>PooledClientBase&lt;TContract&gt;</c>, or null.</summary>
    public ITypeSymbol? PooledContractOf(INamedTypeSymbol type) => TypeArgumentOfBase(type, PooledClientBase);

    /// <summary>The contract of a class derived from <c>ClientBase&lt;TContract&gt;</c>, or null.</summary>
    public ITypeSymbol? ClientContractOf(INamedTypeSymbol type) => TypeArgumentOfBase(type, ClientBase);

    public AttributeData? ServiceContractOf(ITypeSymbol contract) =>
        ServiceContractAttribute is null || contract.TypeKind != TypeKind.Interface
            ? null
            : contract.GetAttributes().FirstOrDefault(a => SymbolEqualityComparer.Default.Equals(a.AttributeClass, ServiceContractAttribute));

    /// <summary>Says whether the contract says <c>SessionMode = SessionMode.Required</c>.</summary>
    public bool RequiresSession(ITypeSymbol contract) =>
        ServiceContractOf(contract) is { } attribute
        && attribute.NamedArguments.Any(a => a.Key == "SessionMode" && a.Value.Value is int mode && mode == 1);

    /// <summary>The callback contract of a duplex contract, or null.</summary>
    public ITypeSymbol? CallbackContractOf(ITypeSymbol contract) =>
        ServiceContractOf(contract)?.NamedArguments.FirstOrDefault(a => a.Key == "CallbackContract").Value.Value as ITypeSymbol;

    private static ITypeSymbol? TypeArgumentOfBase(INamedTypeSymbol type, INamedTypeSymbol? genericBase)
    {
        if (genericBase is null)
        {
            return null;
        }

        for (var current = type.BaseType; current is not null; current = current.BaseType)
        {
            if (SymbolEqualityComparer.Default.Equals(current.OriginalDefinition, genericBase))
            {
                return current.TypeArguments[0];
            }
        }

        return null;
    }
}
