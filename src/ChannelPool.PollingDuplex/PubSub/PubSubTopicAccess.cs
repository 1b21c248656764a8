using System.Security.Claims;
using Microsoft.AspNetCore.Http;

namespace ChannelPool.PollingDuplex.PubSub;

/// <summary>
/// One subscribe or publish that a topic rule decides: who asks, for which topic, to do what. The
/// <see cref="PubSubTopicOptions.Authorize"/> callback gets it, and a <see cref="PubSubTopicOptions.Policy"/> gets it as
/// its resource.
/// </summary>
public sealed class PubSubTopicAccess
{
    /// <summary>Initializes an access request (the endpoint makes them; a test of a rule may too).</summary>
    /// <param name="httpContext">The send request that carries the command.</param>
    /// <param name="userId">The request's user id (<see cref="PollingDuplexOptions.UserIdSelector"/>), or <see langword="null"/> when anonymous.</param>
    /// <param name="topic">The topic.</param>
    /// <param name="operation">What the command asks for: <see cref="PubSubOperation.Subscribe"/> or <see cref="PubSubOperation.Publish"/>.</param>
    public PubSubTopicAccess(HttpContext httpContext, string? userId, string topic, PubSubOperation operation)
    {
        ArgumentNullException.ThrowIfNull(httpContext);
        ArgumentException.ThrowIfNullOrEmpty(topic);
        HttpContext = httpContext;
        UserId = userId;
        Topic = topic;
        Operation = operation;
    }

    /// <summary>Gets the send request that carries the command.</summary>
    public HttpContext HttpContext { get; }

    /// <summary>Gets the request's user, as the application's authentication set it.</summary>
    public ClaimsPrincipal User => HttpContext.User;

    /// <summary>Gets the user's id, the one the session records, or <see langword="null"/> when anonymous.</summary>
    public string? UserId { get; }

    /// <summary>Gets the topic, already checked: 1 to <see cref="PubSubHandler.MaxTopicLength"/> characters, no control characters.</summary>
    public string Topic { get; }

    /// <summary>Gets what the command asks for: subscribe or publish.</summary>
    public PubSubOperation Operation { get; }
}
