using ChannelPool.PollingDuplex.PubSub;
using Microsoft.Extensions.Logging;

namespace ChannelPool.PollingDuplex;

/// <summary>The polling duplex server's log events, under the category <c>ChannelPool.PollingDuplex</c>.</summary>
internal static partial class PollingDuplexLog
{
    [LoggerMessage(1, LogLevel.Debug, "Polling duplex '{Endpoint}': session {SessionId} ended ({Reason}).")]
    public static partial void SessionEnded(ILogger logger, string endpoint, string sessionId, DuplexSessionEndReason reason);

    [LoggerMessage(2, LogLevel.Error, "Polling duplex '{Endpoint}': the application's handler failed for session {SessionId}.")]
    public static partial void HandlerFailed(ILogger logger, string endpoint, string sessionId, Exception error);

    [LoggerMessage(3, LogLevel.Error, "Polling duplex '{Endpoint}': the topic rule failed on a {Operation} of topic '{Topic}' by user {UserId} (session {SessionId}); the command was not received.")]
    public static partial void TopicRuleFailed(ILogger logger, string endpoint, string sessionId, PubSubOperation operation, string topic, string userId, Exception error);
}
