namespace ChannelPool.PollingDuplex.PubSub;

/// <summary>
/// Who may subscribe and publish to which topic on a pub/sub endpoint. Give a rule, <see cref="Authorize"/> or
/// <see cref="Policy"/> (both: each must allow), or set <see cref="AllowAnonymous"/> to say on purpose that every client
/// may use every topic. Mapping a pub/sub endpoint with none of them fails at start. Unsubscribing needs no rule.
/// </summary>
/// <remarks>
/// A command the rule denies is answered <c>403 topic-forbidden</c> and counts as received; the session goes on. A rule
/// that throws is answered <c>500 topic-authorization-failed</c>, logged once with the topic and the user's id, and the
/// command is not received, so the client may send it again. A rule may await (a database, a remote policy service):
/// it holds the send request, not a thread.
/// </remarks>
public sealed class PubSubTopicOptions
{
    /// <summary>
    /// Gets or sets a callback that decides whether the user may subscribe or publish to the topic: return
    /// <see langword="true"/> to allow. Its token is cancelled when the client goes away.
    /// </summary>
    public Func<PubSubTopicAccess, CancellationToken, ValueTask<bool>>? Authorize { get; set; }

    /// <summary>
    /// Gets or sets the name of an ASP.NET Core authorization policy (<c>AddAuthorization</c>) evaluated for each
    /// subscribe and publish with <c>IAuthorizationService</c>, the request's user, and the
    /// <see cref="PubSubTopicAccess"/> as the resource, so a handler such as
    /// <c>AuthorizationHandler&lt;TRequirement, PubSubTopicAccess&gt;</c> sees the topic and the operation.
    /// </summary>
    public string? Policy { get; set; }

    /// <summary>
    /// Gets or sets whether every client, signed in or not, may subscribe and publish to every topic, with no rule. The
    /// explicit choice for topics that are public by design, a demo or a benchmark. Cannot be combined with a rule.
    /// Defaults to <see langword="false"/>.
    /// </summary>
    public bool AllowAnonymous { get; set; }

    /// <summary>Gets whether any of the three is set.</summary>
    internal bool IsConfigured => AllowAnonymous || Authorize is not null || Policy is not null;
}
