using System.Text.Json;
using Microsoft.AspNetCore.SignalR;

namespace ChannelPool.Perf.Peers.SignalR;

/// <summary>
/// The pub/sub service as a SignalR hub: the peer our polling duplex pub/sub is compared with. A topic is a SignalR group;
/// a publish goes to every other member of the group as the client method <c>notify(topic, data)</c>.
/// </summary>
internal sealed class SignalRPubSubHub : Hub
{
    /// <summary>The client method every notification invokes.</summary>
    public const string NotifyMethod = "notify";

    /// <summary>The longest topic, the same as the polling duplex pub/sub service allows.</summary>
    public const int MaxTopicLength = 256;

    /// <summary>Adds the caller to <paramref name="topic"/>.</summary>
    /// <param name="topic">The topic, 1 to <see cref="MaxTopicLength"/> characters.</param>
    /// <returns>A task that completes when the caller is in the group.</returns>
    /// <exception cref="HubException">The topic is empty or too long.</exception>
    public Task Subscribe(string topic)
    {
        ThrowIfInvalid(topic);
        return Groups.AddToGroupAsync(Context.ConnectionId, topic);
    }

    /// <summary>Sends <paramref name="data"/> to every member of <paramref name="topic"/> except the caller.</summary>
    /// <param name="topic">The topic, 1 to <see cref="MaxTopicLength"/> characters.</param>
    /// <param name="data">Any JSON value.</param>
    /// <returns>A task that completes when the notification is written to every member's connection.</returns>
    /// <exception cref="HubException">The topic is empty or too long.</exception>
    public Task Publish(string topic, JsonElement data)
    {
        ThrowIfInvalid(topic);
        return Clients.OthersInGroup(topic).SendAsync(NotifyMethod, topic, data);
    }

    // SignalR sends a HubException's message to the caller even without detailed errors; other exceptions it hides.
    private static void ThrowIfInvalid(string? topic)
    {
        if (string.IsNullOrEmpty(topic) || topic.Length > MaxTopicLength)
        {
            throw new HubException($"A topic needs 1 to {MaxTopicLength} characters.");
        }
    }
}
