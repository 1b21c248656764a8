using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace ChannelPool.PollingDuplex.PubSub;

/// <summary>What a topic rule decided about one client message.</summary>
internal enum TopicDecision
{
    /// <summary>Not a subscribe or publish (or not a command at all, which the store refuses with its reason): go on.</summary>
    Allowed,

    /// <summary>The rule said no: <c>403 topic-forbidden</c>, and the command counts as received.</summary>
    Forbidden,

    /// <summary>The rule threw: <c>500 topic-authorization-failed</c>, and the command is not received.</summary>
    Failed,
}

/// <summary>A topic rule's answer, with the access it judged when it was not a plain yes.</summary>
internal readonly record struct TopicVerdict(TopicDecision Decision, PubSubTopicAccess? Access = null, Exception? Error = null);

/// <summary>
/// Runs a pub/sub endpoint's topic rule (<see cref="PubSubTopicOptions"/>) on each client message before the store sees
/// it: the endpoint code calls it, so every store enforces the same rule the same way, and decides a batch's fate before
/// anything of the forbidden command reaches the store.
/// </summary>
internal sealed class PubSubTopicAuthorizer
{
    private readonly Func<PubSubTopicAccess, CancellationToken, ValueTask<bool>>? _callback;
    private readonly string? _policy;
    private readonly IAuthorizationService? _authorization;

    private PubSubTopicAuthorizer(Func<PubSubTopicAccess, CancellationToken, ValueTask<bool>>? callback, string? policy, IAuthorizationService? authorization)
    {
        _callback = callback;
        _policy = policy;
        _authorization = authorization;
    }

    /// <summary>
    /// Checks the endpoint's topic options and makes its authorizer: <see langword="null"/> for
    /// <see cref="PubSubTopicOptions.AllowAnonymous"/>, so an endpoint with no rule pays nothing for it.
    /// </summary>
    /// <exception cref="InvalidOperationException">No rule and no explicit opt-in, both, or a policy that cannot be found; the message says what to add.</exception>
    public static PubSubTopicAuthorizer? Create(string pattern, PubSubTopicOptions topics, IServiceProvider services)
    {
        var where = $"Pub/sub endpoint '{pattern}'";
        if (!topics.IsConfigured)
        {
            throw new InvalidOperationException(
                $"{where} needs a topic rule: say who may subscribe and publish to which topic. Set options.Topics.Authorize " +
                "(a callback given the user and the topic), or options.Topics.Policy (an ASP.NET Core authorization policy, " +
                "evaluated with the topic as its resource), or, to let every client use every topic, options.Topics.AllowAnonymous = true.");
        }

        if (topics.AllowAnonymous)
        {
            return topics.Authorize is null && topics.Policy is null
                ? null
                : throw new InvalidOperationException($"{where}: options.Topics.AllowAnonymous lets every client use every topic, so it cannot be combined with Topics.Authorize or Topics.Policy. Keep one.");
        }

        IAuthorizationService? authorization = null;
        if (topics.Policy is { } policy)
        {
            if (string.IsNullOrWhiteSpace(policy))
            {
                throw new InvalidOperationException($"{where}: options.Topics.Policy must name an authorization policy; it was empty.");
            }

            authorization = services.GetService<IAuthorizationService>()
                ?? throw new InvalidOperationException($"{where}: options.Topics.Policy names the policy '{policy}', but there is no authorization service. Call services.AddAuthorization(o => o.AddPolicy(\"{policy}\", ...)).");

            // The built-in provider can be asked without waiting; a custom one is trusted to know its policies.
            if (services.GetService<IAuthorizationPolicyProvider>() is DefaultAuthorizationPolicyProvider
                && services.GetService<IOptions<AuthorizationOptions>>()?.Value.GetPolicy(policy) is null)
            {
                throw new InvalidOperationException($"{where}: options.Topics.Policy names the policy '{policy}', which is not registered. Add it: services.AddAuthorization(o => o.AddPolicy(\"{policy}\", ...)).");
            }
        }

        return new PubSubTopicAuthorizer(topics.Authorize, topics.Policy, authorization);
    }

    /// <summary>Decides one client message: what it asks for, and whether the rule lets the request's user do it.</summary>
    public async ValueTask<TopicVerdict> CheckAsync(HttpContext context, string? userId, DuplexMessage message, CancellationToken cancellationToken)
    {
        PubSubCommand command;
        try
        {
            command = PubSubCommand.Parse(message);
        }
        catch (DuplexMessageRejectedException)
        {
            // Not a command: the store refuses it (422) with the same reason, and nothing was asked of the rule.
            return default;
        }

        if (command.Operation == PubSubOperation.Unsubscribe)
        {
            return default;
        }

        var access = new PubSubTopicAccess(context, userId, command.Topic, command.Operation);
        try
        {
            if (_callback is not null && !await _callback(access, cancellationToken).ConfigureAwait(false))
            {
                return new TopicVerdict(TopicDecision.Forbidden, access);
            }

            if (_policy is not null && !(await _authorization!.AuthorizeAsync(context.User, access, _policy).ConfigureAwait(false)).Succeeded)
            {
                return new TopicVerdict(TopicDecision.Forbidden, access);
            }

            return default;
        }
        catch (Exception ex) when (ex is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
        {
            return new TopicVerdict(TopicDecision.Failed, access, ex);
        }
    }
}
