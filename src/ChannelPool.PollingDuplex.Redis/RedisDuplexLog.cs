using Microsoft.Extensions.Logging;

namespace ChannelPool.PollingDuplex.Redis;

/// <summary>The Redis store's log events, under the category <c>ChannelPool.PollingDuplex.Redis</c>.</summary>
internal static partial class RedisDuplexLog
{
    [LoggerMessage(101, LogLevel.Debug, "Polling duplex '{Endpoint}' on Redis: session {SessionId} ended ({Reason}).")]
    public static partial void SessionEnded(ILogger logger, string endpoint, string sessionId, DuplexSessionEndReason reason);

    [LoggerMessage(102, LogLevel.Error, "Polling duplex '{Endpoint}' on Redis: the application's handler failed for session {SessionId}.")]
    public static partial void HandlerFailed(ILogger logger, string endpoint, string sessionId, Exception error);

    [LoggerMessage(103, LogLevel.Warning, "Polling duplex '{Endpoint}' on Redis: Redis did not answer at start, so this node's options are compared with the other nodes' once it does.")]
    public static partial void AgreementDeferred(ILogger logger, string endpoint, Exception error);

    [LoggerMessage(104, LogLevel.Critical, "{Message}")]
    public static partial void OptionsDisagree(ILogger logger, string message);

    [LoggerMessage(105, LogLevel.Debug, "Polling duplex '{Endpoint}' on Redis: cleaning up after session {SessionId} failed; its entries expire on their own.")]
    public static partial void CleanupFailed(ILogger logger, string endpoint, string sessionId, Exception error);
}
