using System.Collections.Concurrent;

namespace ChannelPool.PollingDuplex;

/// <summary>
/// In-memory sessions grouped by a key: a topic's subscribers, a user's sessions. A fan-out walks a snapshot array with
/// no lock held. Joining and leaving cost O(1): the snapshot is rebuilt only when a fan-out asks for it after a change,
/// so a fleet of M subscribers joining or leaving costs O(M), where a copy on every change cost O(M²) (14,000
/// subscribers copied a 112 KB array each, on the large-object heap). A group goes away with its last member, so keys
/// nobody holds cost nothing.
/// </summary>
internal sealed class SessionGroups
{
    private readonly ConcurrentDictionary<string, Group> _groups = new(StringComparer.Ordinal);

    /// <summary>Gets how many groups have members.</summary>
    public int Count => _groups.Count;

    /// <summary>Gets the group's members now: a snapshot, safe to walk while members come and go.</summary>
    public DuplexSession[] Members(string key) => _groups.TryGetValue(key, out var group) ? group.Members : [];

    /// <summary>Gets how many members the group has now, without taking a snapshot.</summary>
    public int MemberCount(string key) => _groups.TryGetValue(key, out var group) ? group.Count : 0;

    /// <summary>Gets the group with the most members and how many it has, or null when there is none. Walks every group.</summary>
    public (string Key, int Count)? Largest()
    {
        (string Key, int Count)? largest = null;
        foreach (var (key, group) in _groups)
        {
            var count = group.Count;
            if (largest is null || count > largest.Value.Count)
            {
                largest = (key, count);
            }
        }

        return largest;
    }

    /// <summary>Adds a member; a session already in the group stays there once.</summary>
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
        private readonly List<DuplexSession> _members = [];

        // Where each member sits in _members, so a removal swaps the last member into its place instead of shifting.
        private readonly Dictionary<DuplexSession, int> _positions = new(ReferenceEqualityComparer.Instance);
        private DuplexSession[]? _snapshot = [];
        private bool _retired;

        public int Count => Volatile.Read(ref _snapshot)?.Length ?? CountUnderLock();

        public DuplexSession[] Members
        {
            get
            {
                if (Volatile.Read(ref _snapshot) is { } snapshot)
                {
                    return snapshot;
                }

                using (_lock.EnterScope())
                {
                    return _snapshot ??= [.. _members];
                }
            }
        }

        /// <summary>Adds a member; false when the group has emptied and been retired, so the caller needs a new one.</summary>
        public bool TryAdd(DuplexSession session)
        {
            using (_lock.EnterScope())
            {
                if (_retired)
                {
                    return false;
                }

                if (_positions.TryAdd(session, _members.Count))
                {
                    _members.Add(session);
                    _snapshot = null;
                }

                return true;
            }
        }

        /// <summary>Removes a member; returns true when that left the group empty, which retires it for good.</summary>
        public bool Remove(DuplexSession session)
        {
            using (_lock.EnterScope())
            {
                if (_positions.Remove(session, out var position))
                {
                    var last = _members.Count - 1;
                    if (position != last)
                    {
                        _members[position] = _members[last];
                        _positions[_members[position]] = position;
                    }

                    _members.RemoveAt(last);
                    _snapshot = null;
                }

                _retired = _members.Count == 0;
                return _retired;
            }
        }

        private int CountUnderLock()
        {
            using (_lock.EnterScope())
            {
                return _members.Count;
            }
        }
    }
}
