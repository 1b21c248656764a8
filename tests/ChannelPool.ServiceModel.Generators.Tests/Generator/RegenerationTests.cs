using Microsoft.CodeAnalysis;

namespace ChannelPool.ServiceModel.Generators.Tests.Generator;

/// <summary>
/// Regenerating <c>Reference.cs</c> after the service gained an operation: the twin picks it up on the next build with
/// no edit. The same checked-in files the integration tests compile, run through the generator in memory.
/// </summary>
[TestFixture]
public sealed class RegenerationTests
{
    private const string ReferencePath = "ServiceReference/Reference.cs";
    private const string Twin = "ServiceReference.PooledEchoServiceClient";

    private static readonly (string, string)[] AppSources =
    [
        ("PooledEchoServiceClient.cs", """
            using ChannelPool.ServiceModel;
            namespace ServiceReference;
            [PooledClient(typeof(EchoServiceClient))]
            public partial class PooledEchoServiceClient : PooledClientBase<IEchoService>;
            """),
        ("EchoServiceClient.Configure.cs", """
            namespace ServiceReference;
            public partial class EchoServiceClient
            {
                static partial void ConfigureEndpoint(System.ServiceModel.Description.ServiceEndpoint serviceEndpoint, System.ServiceModel.Description.ClientCredentials clientCredentials) =>
                    clientCredentials.UserName.UserName = "app";
            }
            """),
    ];

    [Test]
    public void ARegeneratedReferenceCsWithOneMoreOperation_GivesTheTwinThatOperation_WithNoEdit()
    {
        var first = GeneratorHarness.Run([(ReferencePath, GeneratorHarness.ReadFile("ServiceReference/Reference.cs")), .. AppSources]);

        var regenerated = first.WithSource(ReferencePath, GeneratorHarness.ReadFile("Regenerated/Reference.cs"));

        Assert.That(first.CompilerErrors, Is.Empty);
        Assert.That(first.PublicMethods(Twin), Is.EquivalentTo(new[] { "Echo", "EchoAfter", "EchoAfterAsync", "EchoAsync", "Fail", "FailAsync" }));
        Assert.That(regenerated.CompilerErrors, Is.Empty, "the app compiles after regeneration with nothing edited");
        Assert.That(regenerated.PublicMethods(Twin), Is.EquivalentTo(new[] { "Echo", "EchoAfter", "EchoAfterAsync", "EchoAsync", "Fail", "FailAsync", "WhoAmI", "WhoAmIAsync" }));
        Assert.That(regenerated.Input.SyntaxTrees.Where(t => t.FilePath != ReferencePath).Select(t => t.ToString()), Is.EqualTo(first.Input.SyntaxTrees.Where(t => t.FilePath != ReferencePath).Select(t => t.ToString())), "only Reference.cs changed");
    }

    [Test]
    public void AnEditElsewhereInTheApp_LeavesTheGeneratedFilesAsTheyWere()
    {
        var first = GeneratorHarness.Run([(ReferencePath, GeneratorHarness.ReadFile("ServiceReference/Reference.cs")), .. AppSources, ("Other.cs", "class Other { }")]);

        var next = first.WithSource("Other.cs", "class Other { int _edited; }");

        var reasons = next.Result.Results.Single().TrackedOutputSteps.SelectMany(step => step.Value).SelectMany(run => run.Outputs).Select(output => output.Reason);
        Assert.That(reasons, Is.Not.Empty.And.All.AnyOf(IncrementalStepRunReason.Cached, IncrementalStepRunReason.Unchanged), "the pipeline compared its output and wrote nothing new");
        Assert.That(next.GeneratedSource("PooledEchoServiceClient.PooledClient.g.cs"), Is.EqualTo(first.GeneratedSource("PooledEchoServiceClient.PooledClient.g.cs")));
    }
}
