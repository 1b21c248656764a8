using NUnit.Framework;

namespace ChannelPool.Tests.EveryProject;

/// <summary>
/// Compiled into every test project (<c>tests/Directory.Build.props</c>): each pool a test creates checks its invariant
/// after every transition, in the Release build the tests run in too.
/// </summary>
public class InvariantSwitchTests
{
    [Test]
    public void TheInvariantCheck_IsSwitchedOn_ForThisTestProject()
    {
        Assert.That(
            AppContext.TryGetSwitch("ChannelPool.CheckInvariants", out var on) && on,
            Is.True,
            "tests/Directory.Build.props sets the ChannelPool.CheckInvariants switch for every test project.");
    }
}
