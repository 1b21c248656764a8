using System.Net.Sockets;
using System.Reflection;
using System.ServiceModel;

namespace ChannelPool.ServiceModel;

/// <summary>
/// Finds out whether an idle session channel's connection is still alive, without sending anything: it polls the
/// channel's socket. A WCF client keeps no read pending on an idle request-reply session, so when a service aborts or
/// ends that session the channel still says <see cref="CommunicationState.Opened"/> until the next call fails. The probe
/// catches that before a caller gets the channel, as database pools check a connection before lending it.
/// </summary>
/// <remarks>
/// WCF does not expose a channel's socket, so the probe finds it by walking the first channel's fields (a breadth-first
/// search that never enters the shared channel factory), and reuses that path for every channel of the same factory.
/// The path is per factory, not per type: channels of every binding share one proxy type. Where no socket is found
/// (HTTP bindings, whose handler replaces dead connections itself, or a future WCF that is laid out differently), the
/// channel is judged by its state alone.
/// </remarks>
internal sealed class SessionProbe
{
    private const int MaxDepth = 12;
    private static readonly FieldInfo[] NotFound = [];
    private FieldInfo[]? _path;

    /// <summary>Says whether the channel's connection is closed, reset, or has unexpected data waiting.</summary>
    /// <param name="channel">The real WCF channel (not the tracking wrapper).</param>
    /// <returns><see langword="true"/> when the connection is known dead; <see langword="false"/> when alive or unknown.</returns>
    public bool IsConnectionLost(object channel)
    {
        // Racing searches find the same path; the last one wins harmlessly.
        var path = Volatile.Read(ref _path) ?? (_path = FindSocketPath(channel) ?? NotFound);
        if (path.Length == 0 || Follow(channel, path) is not { } socket)
        {
            return false;
        }

        try
        {
            // Readable on an idle request-reply session means the peer closed, reset, or sent an end or fault record.
            return socket.Poll(0, SelectMode.SelectRead) || socket.Poll(0, SelectMode.SelectError);
        }
        catch (ObjectDisposedException)
        {
            return true;
        }
        catch (SocketException)
        {
            return true;
        }
    }

    private static Socket? Follow(object root, FieldInfo[] path)
    {
        object? current = root;
        foreach (var field in path)
        {
            if (current is null || !field.DeclaringType!.IsInstanceOfType(current))
            {
                return null;
            }

            current = field.GetValue(current);
        }

        return current as Socket;
    }

    private static FieldInfo[]? FindSocketPath(object root)
    {
        var visited = new HashSet<object>(ReferenceEqualityComparer.Instance) { root };
        var queue = new Queue<(object Node, FieldInfo[] Path)>();
        queue.Enqueue((root, []));
        while (queue.Count > 0)
        {
            var (node, path) = queue.Dequeue();
            if (path.Length >= MaxDepth)
            {
                continue;
            }

            foreach (var field in InstanceFields(node.GetType()))
            {
                if (field.FieldType.IsValueType || field.FieldType.IsPointer || field.GetValue(node) is not { } value)
                {
                    continue;
                }

                FieldInfo[] next = [.. path, field];
                if (value is Socket)
                {
                    return next;
                }

                if (IsWorthEntering(value) && visited.Add(value))
                {
                    queue.Enqueue((value, next));
                }
            }
        }

        return null;
    }

    // The factory and everything shared between channels would lead to other channels' sockets.
    private static bool IsWorthEntering(object value) =>
        value is not (string or Type or Delegate or Array or ChannelFactory or System.ServiceModel.Channels.IChannelFactory or MemberInfo)
        && value.GetType().Namespace?.StartsWith("System.ServiceModel", StringComparison.Ordinal) is true
           || value is Stream;

    private static IEnumerable<FieldInfo> InstanceFields(Type type)
    {
        for (var t = type; t is not null && t != typeof(object); t = t.BaseType)
        {
            foreach (var field in t.GetFields(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.DeclaredOnly))
            {
                yield return field;
            }
        }
    }
}
