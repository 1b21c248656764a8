using System.Reflection;
using System.Xml.Linq;

namespace ChannelPool.Tests.Documentation;

/// <summary>
/// The XML documentation that ships beside each library (and that IntelliSense shows) describes its public API only: the
/// build leaves out what the compiler wrote for internal types and members (src/Directory.Build.targets).
/// </summary>
public class ShippedDocumentationTests
{
    private const BindingFlags Everything = BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Instance | BindingFlags.Static | BindingFlags.DeclaredOnly;

    /// <summary>The shipping libraries the tests' output holds, each with its documentation file.</summary>
    private static IEnumerable<string> Libraries() =>
        Directory.GetFiles(AppContext.BaseDirectory, "ChannelPool*.xml")
            .Select(Path.GetFileNameWithoutExtension)
            .Where(name => !name!.Contains("Test", StringComparison.Ordinal) && File.Exists(Path.Combine(AppContext.BaseDirectory, name + ".dll")))
            .Order()!;

    [Test]
    public void TheEngineShipsItsDocumentation_WithThePublicTypesAndWithoutTheInternalOnes()
    {
        var names = Members("ChannelPool").Select(m => m.Name).ToHashSet();

        Assert.That(names, Does.Contain("T:ChannelPool.DefaultChannelPool`1").And.Contain("M:ChannelPool.DefaultChannelPool`1.AcquireAsync(System.Threading.CancellationToken)"));
        Assert.That(names, Does.Not.Contain("T:ChannelPool.PoolState`1").And.Not.Contain("T:ChannelPool.PooledChannel`1").And.Not.Contain("T:ChannelPool.IdleQueue`1"));
    }

    [TestCaseSource(nameof(Libraries))]
    public void EveryDocumentedTypeAndMember_IsPublicApi(string library)
    {
        var assembly = Assembly.LoadFrom(Path.Combine(AppContext.BaseDirectory, library + ".dll"));
        var notPublic = Members(library).Where(member => !IsPublic(assembly, member.Kind, member.Id)).Select(member => member.Name).ToList();

        Assert.That(notPublic, Is.Empty, $"{library}.xml documents what is not public");

        // And nothing public was left out with them: every public type is documented (CS1591 makes that a build error).
        var documented = Members(library).Where(m => m.Kind == 'T').Select(m => m.Id).ToHashSet();
        var undocumented = assembly.GetExportedTypes()
            .Where(type => !type.Name.StartsWith('<'))
            .Select(type => type.FullName!.Replace('+', '.'))
            .Where(name => !documented.Contains(name))
            .ToList();
        Assert.That(undocumented, Is.Empty, $"{library}.xml lost public types");
    }

    private static List<(string Name, char Kind, string Id)> Members(string library) =>
        XDocument.Load(Path.Combine(AppContext.BaseDirectory, library + ".xml"))
            .Descendants("member")
            .Select(m => (string)m.Attribute("name")!)
            .Where(name => !name.StartsWith("N:", StringComparison.Ordinal))
            .Select(name => (name, name[0], name[2..]))
            .ToList();

    private static bool IsPublic(Assembly assembly, char kind, string id)
    {
        if (kind == 'T')
        {
            return TypeOf(assembly, id) is { IsVisible: true };
        }

        var parameters = id.IndexOf('(', StringComparison.Ordinal);
        var path = parameters < 0 ? id : id[..parameters];
        var dot = path.LastIndexOf('.');
        var type = TypeOf(assembly, path[..dot]);
        var name = path[(dot + 1)..].Split("``")[0].Replace('#', '.');
        return type is { IsVisible: true } && type.GetMember(name, Everything).Any(IsVisibleMember);
    }

    private static Type? TypeOf(Assembly assembly, string id)
    {
        // Nested types are written A.B.C in documentation IDs and A.B+C by reflection: try each split from the right.
        var parts = id.Split('.');
        for (var nested = 0; nested < parts.Length; nested++)
        {
            var name = string.Join('.', parts[..^nested]) + string.Concat(parts[^nested..].Select(p => "+" + p));
            if (assembly.GetType(name) is { } type)
            {
                return type;
            }
        }

        return null;
    }

    private static bool IsVisibleMember(MemberInfo member) => member switch
    {
        MethodBase method => method.IsPublic || method.IsFamily || method.IsFamilyOrAssembly,
        FieldInfo field => field.IsPublic || field.IsFamily || field.IsFamilyOrAssembly,
        PropertyInfo property => property.GetAccessors(nonPublic: true).Any(IsVisibleMember),
        EventInfo @event => @event.AddMethod is { } add && IsVisibleMember(add),
        Type type => type.IsVisible,
        _ => false,
    };
}
