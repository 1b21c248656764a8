using System.Text.RegularExpressions;
using ChannelPool.Perf.Cli;
using ChannelPool.Perf.Peers;

namespace ChannelPool.Perf.Tests;

/// <summary>Every perf console command docs/performance.md names still parses, so a dropped or renamed option cannot orphan a cited figure.</summary>
internal sealed partial class DocumentedCommandsTests
{
    [Test]
    public void EveryCommandInThePerformancePage_Parses_InTheConsoleItNames()
    {
        var commands = DocumentedCommands().ToList();

        Assert.That(commands, Has.Count.GreaterThanOrEqualTo(15), "the page's run section was found");
        foreach (var (project, arguments) in commands)
        {
            var parse = PerfCli.Build(project.EndsWith(".Peers", StringComparison.Ordinal) ? PeerConsole.Peers : PerfPeers.None).Parse(arguments);
            Assert.That(parse.Errors.Select(e => e.Message), Is.Empty, $"{project} -- {string.Join(' ', arguments)}");
        }
    }

    private static IEnumerable<(string Project, string[] Arguments)> DocumentedCommands()
    {
        var root = new DirectoryInfo(TestContext.CurrentContext.TestDirectory);
        while (root is not null && !File.Exists(Path.Combine(root.FullName, "docs", "performance.md")))
        {
            root = root.Parent;
        }

        Assert.That(root, Is.Not.Null, "docs/performance.md above the test's folder");
        foreach (Match match in Command().Matches(File.ReadAllText(Path.Combine(root!.FullName, "docs", "performance.md"))))
        {
            // Words as a shell splits them: double quotes keep spaces, a # starts the comment.
            var line = match.Groups["args"].Value.Split(" #", 2)[0];
            string[] arguments = [.. line.Split('"').SelectMany((part, i) => i % 2 == 1 ? [part] : part.Split(' ', StringSplitOptions.RemoveEmptyEntries))];
            yield return (match.Groups["project"].Value, arguments);
        }
    }

    [GeneratedRegex(@"dotnet run -c Release --project perf/(?<project>ChannelPool\.Perf(\.Peers)?)(?: --(?<args>[^`\n]*))?")]
    private static partial Regex Command();
}
