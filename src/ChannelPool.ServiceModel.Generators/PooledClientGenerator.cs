using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp.Syntax;

namespace ChannelPool.ServiceModel.Generators;

/// <summary>
/// Writes the members of every class marked <c>[PooledClient]</c>: a pooled twin of a generated WCF client, or the
/// boilerplate of a hand-written pooled proxy. See <c>PooledClientAttribute</c> in ChannelPool.ServiceModel.
/// </summary>
[Generator(LanguageNames.CSharp)]
public sealed class PooledClientGenerator : IIncrementalGenerator
{
    /// <inheritdoc />
    public void Initialize(IncrementalGeneratorInitializationContext context)
    {
        // ForAttributeWithMetadataName looks only at classes carrying the attribute, found through the compiler's own
        // index of attribute names: a project with a large Reference.cs and no twin pays almost nothing.
        var twins = context.SyntaxProvider.ForAttributeWithMetadataName(
            KnownTypes.PooledClientAttributeName,
            static (node, _) => node is ClassDeclarationSyntax,
            static (attributed, cancellationToken) => TwinBuilder.Build(attributed, cancellationToken));

        context.RegisterSourceOutput(twins, static (output, twin) =>
        {
            foreach (var diagnostic in twin.Diagnostics)
            {
                output.ReportDiagnostic(diagnostic.ToDiagnostic());
            }

            if (twin.Source is not null)
            {
                output.AddSource(twin.HintName, twin.Source);
            }
        });

        // Two twins of one generated client need its part once.
        var clientParts = twins.Select(static (twin, _) => twin.ClientPart).Where(static part => part is not null).Collect();
        context.RegisterSourceOutput(clientParts, static (output, parts) =>
        {
            foreach (var part in parts.GroupBy(part => part!.HintName, StringComparer.Ordinal).Select(group => group.First()!))
            {
                output.AddSource(part.HintName, part.Source);
            }
        });
    }
}

/// <summary>What the generator writes for one <c>[PooledClient]</c> class; compared by value between runs.</summary>
internal sealed record TwinOutput(string HintName, string? Source, GeneratedSource? ClientPart, EquatableArray<DiagnosticInfo> Diagnostics);

/// <summary>One generated file.</summary>
internal sealed record GeneratedSource(string HintName, string Source);
