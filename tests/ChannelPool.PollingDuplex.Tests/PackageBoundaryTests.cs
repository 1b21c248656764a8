using System.Reflection;
using System.Runtime.CompilerServices;
using ChannelPool.PollingDuplex.Client;
using ChannelPool.PollingDuplex.Stores;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>
/// The polling duplex packages ship and upgrade one by one, so each may use the others' public API only: an internal
/// reached across packages fails at run time with MissingMethodException when one package is upgraded alone.
/// </summary>
public class PackageBoundaryTests
{
    private static readonly Assembly[] Packages =
    [
        typeof(DuplexMessage).Assembly,
        typeof(DuplexSessionStore).Assembly,
        typeof(PollingDuplexClient).Assembly,
        typeof(Microsoft.Extensions.DependencyInjection.RedisPollingDuplexServiceCollectionExtensions).Assembly,
    ];

    [Test]
    public void EveryDuplexPackage_OpensItsInternalsToTheTestProjectAtMost()
    {
        foreach (var package in Packages)
        {
            var friends = package.GetCustomAttributes<InternalsVisibleToAttribute>().Select(a => a.AssemblyName);

            Assert.That(friends, Is.SubsetOf(new[] { "ChannelPool.PollingDuplex.Tests" }), package.GetName().Name);
        }
    }
}
