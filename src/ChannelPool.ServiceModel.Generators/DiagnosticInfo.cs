using System.Collections.Immutable;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.Text;

namespace ChannelPool.ServiceModel.Generators;

/// <summary>
/// A diagnostic as plain values. A <see cref="Location"/> holds its syntax tree, which would keep every compilation
/// alive in the pipeline's cache and make every run look changed.
/// </summary>
internal sealed record DiagnosticInfo(DiagnosticDescriptor Descriptor, string FilePath, TextSpan Span, LinePositionSpan LineSpan, EquatableArray<string> Arguments)
{
    public static DiagnosticInfo Create(DiagnosticDescriptor descriptor, Location location, params string[] arguments)
    {
        var lines = location.GetLineSpan();
        return new DiagnosticInfo(descriptor, lines.Path, location.SourceSpan, lines.Span, new EquatableArray<string>(arguments.ToImmutableArray()));
    }

    public Diagnostic ToDiagnostic() =>
        Diagnostic.Create(Descriptor, Location.Create(FilePath, Span, LineSpan), Arguments.Cast<object>().ToArray());
}
