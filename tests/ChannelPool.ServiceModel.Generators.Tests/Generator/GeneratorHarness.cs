using System.Collections.Immutable;
using System.ServiceModel;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;
using Microsoft.CodeAnalysis.Diagnostics;

namespace ChannelPool.ServiceModel.Generators.Tests.Generator;

/// <summary>
/// Compiles sources in memory against .NET 10's reference assemblies, the WCF client and ChannelPool.ServiceModel, runs
/// <see cref="PooledClientGenerator"/> through Roslyn's own <see cref="CSharpGeneratorDriver"/>, then
/// <see cref="PooledClientAnalyzer"/> over the result: what a build does, without a build.
/// </summary>
internal static class GeneratorHarness
{
    private static readonly CSharpParseOptions ParseOptions = new(LanguageVersion.Latest);

    private static readonly Lazy<ImmutableArray<MetadataReference>> References = new(() =>
    [
        .. Basic.Reference.Assemblies.Net100.References.All,
        .. new[]
        {
            typeof(ClientBase<>),
            typeof(BasicHttpBinding),
            typeof(NetTcpBinding),
            typeof(PooledClientBase<>),
            typeof(DefaultChannelPool<>),
            typeof(Microsoft.Extensions.DependencyInjection.ChannelPoolBuilder<>),
            typeof(Microsoft.Extensions.DependencyInjection.IServiceCollection),
            typeof(Microsoft.Extensions.DependencyInjection.ActivatorUtilitiesConstructorAttribute),
            typeof(Microsoft.Extensions.Logging.ILoggerFactory),
            typeof(Microsoft.Extensions.Options.IOptions<>),
        }.Select(type => type.Assembly.Location).Distinct().Select(path => MetadataReference.CreateFromFile(path)),
    ]);

    /// <summary>Compiles <paramref name="sources"/> and runs the generator once.</summary>
    public static GeneratorRun Run(params (string Path, string Text)[] sources)
    {
        var compilation = CSharpCompilation.Create(
            "App",
            sources.Select(source => CSharpSyntaxTree.ParseText(source.Text, ParseOptions, source.Path)),
            References.Value,
            new CSharpCompilationOptions(OutputKind.DynamicallyLinkedLibrary, nullableContextOptions: NullableContextOptions.Enable));
        GeneratorDriver driver = CSharpGeneratorDriver.Create(
            [new PooledClientGenerator().AsSourceGenerator()],
            parseOptions: ParseOptions,
            driverOptions: new GeneratorDriverOptions(IncrementalGeneratorOutputKind.None, trackIncrementalGeneratorSteps: true));
        return GeneratorRun.From(driver, compilation);
    }

    /// <summary>Reads a file the test project copies to its output folder.</summary>
    public static string ReadFile(string relativePath) => File.ReadAllText(Path.Combine(AppContext.BaseDirectory, relativePath));
}

/// <summary>One run of the generator: its output compilation, the generator's and the compiler's diagnostics.</summary>
internal sealed class GeneratorRun
{
    private GeneratorRun(GeneratorDriver driver, Compilation input, Compilation output, ImmutableArray<Diagnostic> generatorDiagnostics)
    {
        Driver = driver;
        Input = input;
        Output = output;
        GeneratorDiagnostics = generatorDiagnostics;
    }

    public GeneratorDriver Driver { get; }

    public Compilation Input { get; }

    public Compilation Output { get; }

    public ImmutableArray<Diagnostic> GeneratorDiagnostics { get; }

    public GeneratorDriverRunResult Result => Driver.GetRunResult();

    /// <summary>The errors the compiler reports for the app with the generated sources in it.</summary>
    public IEnumerable<Diagnostic> CompilerErrors => Output.GetDiagnostics().Where(d => d.Severity == DiagnosticSeverity.Error);

    public static GeneratorRun From(GeneratorDriver driver, Compilation input)
    {
        driver = driver.RunGeneratorsAndUpdateCompilation(input, out var output, out var diagnostics);
        return new GeneratorRun(driver, input, output, diagnostics);
    }

    /// <summary>Runs the same driver again over the input with one source replaced, as the next build after an edit.</summary>
    public GeneratorRun WithSource(string path, string text)
    {
        var old = Input.SyntaxTrees.Single(tree => tree.FilePath == path);
        var replaced = Input.ReplaceSyntaxTree(old, CSharpSyntaxTree.ParseText(text, (CSharpParseOptions)old.Options, path));
        return From(Driver, replaced);
    }

    /// <summary>Every diagnostic of the generator and of <see cref="PooledClientAnalyzer"/>.</summary>
    public async Task<IReadOnlyList<Diagnostic>> ChannelPoolDiagnosticsAsync()
    {
        var analyzed = await Output.WithAnalyzers([new PooledClientAnalyzer()]).GetAnalyzerDiagnosticsAsync();
        return [.. GeneratorDiagnostics, .. analyzed];
    }

    public string GeneratedSource(string hintNameEnd) =>
        Result.Results.Single().GeneratedSources.Single(source => source.HintName.EndsWith(hintNameEnd, StringComparison.Ordinal)).SourceText.ToString();

    public INamedTypeSymbol Type(string metadataName) =>
        Output.GetTypeByMetadataName(metadataName) ?? throw new AssertionException($"The app has no type {metadataName}.");

    public IEnumerable<string> PublicMethods(string metadataName) =>
        Type(metadataName).GetMembers().OfType<IMethodSymbol>()
            .Where(m => m.MethodKind == MethodKind.Ordinary && m.DeclaredAccessibility == Accessibility.Public && !m.IsStatic)
            .Select(m => m.Name);
}
