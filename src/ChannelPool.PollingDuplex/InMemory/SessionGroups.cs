using System.Collections.Concurrent;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// In-memory sessions grouped by a key: a topic's subscribers, a user's sessions. Each group is a copy-on-write array,
/// so a fan-out walks a stable array with no lock held; a group goes away with its last member, so keys nobody holds
/// cost nothing.
/// </summary>
internal sealed class SessionGroups
{
    private readonly ConcurrentDictionary<string, Group> _groups = new(StringComparer.Ordinal);

    /// <summary>Gets how many groups have members.</summary>
    public int Count => _groups.Count;

    /// <summary>Gets the group's members now: a snapshot, safe to walk while members come and go.</summary>
    public DuplexSession[] Members(string key) => _groups.TryGetValue(key, out var group) ? group.Members : [];

    public void Add(string key, DuplexSession session)
    {
        while (_groups.GetOrAdd(key, static _ => new Group()) is var group && !group.TryAdd(session))
        {
            // The group emptied and was retired: help remove it, and the next GetOrAdd makes a fresh one.
            _groups.TryRemove(new KeyValuePair<string, Group>(key, group));
        }
    }

    /// <summary>Removes a member; the last one out removes the group.</summary>
    public void Remove(string key, DuplexSession session)
    {
        if (_groups.TryGetValue(key, out var group) && group.Remove(session))
        {
            _groups.TryRemove(new KeyValuePair<string, Group>(key, group));
        }
    }

    private sealed class Group
    {
        private readonly Lock _lock = new();
        private DuplexSession[] _members = [];
        private bool _retired;

        public DuplexSession[] Members => Volatile.Read(ref _members);

        /// <summary>Adds a member; false when the group has emptied and been retired, so the caller needs a new one.</summary>
        public bool TryAdd(DuplexSession session)
        {
            using (_lock.EnterScope())
            {
                if (_retired)
                {
                    return false;
                }

                _members = [.. _members, session];
                return true;
            }
        }

        /// <summary>Removes a member; returns true when that left the group empty, which retires it for good.</summary>
        public bool Remove(DuplexSession session)
        {
            using (_lock.EnterScope())
            {
                _members = [.. _members.Where(s => s != session)];
                _retired = _members.Length == 0;
                return _retired;
            }
        }
    }
}
