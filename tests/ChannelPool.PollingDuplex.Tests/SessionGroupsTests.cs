using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Time.Testing;

namespace ChannelPool.PollingDuplex.Tests;

/// <summary>
/// The groups behind a topic's subscribers and a user's sessions: snapshots that stay stable while members come and go,
/// removal from the middle that keeps everyone else, and membership that stays exact under concurrent joins and leaves.
/// </summary>
[TestFixture]
public sealed class SessionGroupsTests
{
    private InMemorySessionStore _store = null!;

    [SetUp]
    public void CreateStore() =>
        _store = new InMemorySessionStore("/g", new PollingDuplexOptions { MaxPendingSessions = 10_000 }, new RecordingHandler(), new FakeTimeProvider(), NullLogger.Instance);

    [TearDown]
    public void DisposeStore() => _store.Dispose();

    [Test]
    public void ASnapshot_KeepsItsMembers_WhileTheGroupChanges()
    {
        var groups = new SessionGroups();
        var (a, b, c) = (NewSession(), NewSession(), NewSession());
        groups.Add("t", a);
        groups.Add("t", b);

        var before = groups.Members("t");
        groups.Remove("t", a);
        groups.Add("t", c);

        Assert.That(before, Is.EqualTo(new[] { a, b }), "a snapshot taken before the change is not changed by it");
        Assert.That(groups.Members("t"), Is.EquivalentTo(new[] { b, c }));
        Assert.That(groups.MemberCount("t"), Is.EqualTo(2));
    }

    [Test]
    public void RemovingFromTheMiddle_KeepsEveryOtherMember_AndAddingTwice_KeepsOne()
    {
        var groups = new SessionGroups();
        var sessions = Enumerable.Range(0, 10).Select(_ => NewSession()).ToArray();
        foreach (var session in sessions)
        {
            groups.Add("t", session);
        }

        groups.Add("t", sessions[4]);
        groups.Remove("t", sessions[3]);
        groups.Remove("t", sessions[0]);
        groups.Remove("t", NewSession());

        Assert.That(groups.Members("t"), Is.EquivalentTo(sessions.Except([sessions[3], sessions[0]])));
        Assert.That(groups.MemberCount("t"), Is.EqualTo(8));
    }

    [Test]
    public void TheLastMemberOut_RemovesTheGroup_AndANewMemberStartsAFreshOne()
    {
        var groups = new SessionGroups();
        var (a, b) = (NewSession(), NewSession());
        groups.Add("t", a);
        groups.Add("u", b);

        groups.Remove("t", a);

        Assert.That(groups.Count, Is.EqualTo(1), "only u is left");
        Assert.That(groups.Members("t"), Is.Empty);
        Assert.That(groups.MemberCount("t"), Is.Zero);

        groups.Add("t", b);
        Assert.That(groups.Members("t"), Is.EqualTo(new[] { b }));
        Assert.That(groups.Count, Is.EqualTo(2));
    }

    [Test]
    public void AFleetJoiningAndLeaving_AllocatesInProportionToItsSize_NotItsSquare()
    {
        var groups = new SessionGroups();
        var fleet = Enumerable.Range(0, 5_000).Select(_ => NewSession()).ToArray();

        var before = GC.GetAllocatedBytesForCurrentThread();
        foreach (var session in fleet)
        {
            groups.Add("t", session);
        }

        var snapshot = groups.Members("t");
        foreach (var session in fleet)
        {
            groups.Remove("t", session);
        }

        var allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        // A copy on every join and leave would allocate about 5,000² × 8 bytes = 200 MB here; O(M) is well under 2 MB.
        Assert.That(snapshot, Has.Length.EqualTo(fleet.Length));
        Assert.That(allocated, Is.LessThan(2_000_000), $"{allocated:N0} bytes for {fleet.Length:N0} joins and leaves");
    }

    [Test]
    public async Task ConcurrentJoinsAndLeaves_LeaveExactlyTheMembersThatStayed()
    {
        var groups = new SessionGroups();
        var stays = Enumerable.Range(0, 400).Select(_ => NewSession()).ToArray();
        var leaves = Enumerable.Range(0, 400).Select(_ => NewSession()).ToArray();
        using var start = new Barrier(4);

        // Two threads join, one leaves what the other joined, one takes snapshots throughout: every snapshot it sees
        // must hold distinct sessions, and the end state must be exactly the sessions that stayed.
        var seenDuplicate = false;
        var tasks = new[]
        {
            Task.Run(() => { start.SignalAndWait(); foreach (var s in stays) { groups.Add("t", s); } }),
            Task.Run(() => { start.SignalAndWait(); foreach (var s in leaves) { groups.Add("t", s); } }),
            Task.Run(() => { start.SignalAndWait(); for (var i = 0; i < leaves.Length; i++) { while (!groups.Members("t").Contains(leaves[i])) { Thread.Yield(); } groups.Remove("t", leaves[i]); } }),
            Task.Run(() =>
            {
                start.SignalAndWait();
                for (var i = 0; i < 2_000; i++)
                {
                    var snapshot = groups.Members("t");
                    seenDuplicate |= snapshot.Distinct().Count() != snapshot.Length;
                }
            }),
        };
        await Task.WhenAll(tasks).WaitAsync(TimeSpan.FromMinutes(1));

        Assert.That(seenDuplicate, Is.False);
        Assert.That(groups.Members("t"), Is.EquivalentTo(stays));
        Assert.That(groups.MemberCount("t"), Is.EqualTo(stays.Length));
    }

    private DuplexSession NewSession() => _store.Create(DuplexEncoding.Text, PollingDuplexMode.MultipleMessagesPerPoll).Session;
}
