using Microsoft.Extensions.Logging;

namespace ChannelPool;

/// <summary>The pool's log messages. None of them is on the lease/release hot path.</summary>
internal static partial class Log
{
    [LoggerMessage(1, LogLevel.Debug, "Channel pool '{PoolName}' created: PoolSize={PoolSize}, MaxChannels={MaxChannels}, RefillThreshold={RefillThreshold}, ChannelLifetime={ChannelLifetime}, LeaseMode={LeaseMode}.")]
    public static partial void PoolCreated(ILogger logger, string poolName, int poolSize, int maxChannels, int refillThreshold, TimeSpan channelLifetime, LeaseMode leaseMode);

    [LoggerMessage(2, LogLevel.Debug, "Channel pool '{PoolName}' is opening {Count} channel(s) in the background.")]
    public static partial void OpensStarted(ILogger logger, string poolName, int count);

    [LoggerMessage(3, LogLevel.Warning, "Channel pool '{PoolName}' could not open a channel.")]
    public static partial void OpenAttemptFailed(ILogger logger, string poolName, Exception error);

    [LoggerMessage(4, LogLevel.Error, "Channel pool '{PoolName}' stopped opening channels for {BreakDuration} after repeated open failures; callers with no idle channel fail fast until then.")]
    public static partial void BreakerOpened(ILogger logger, string poolName, TimeSpan breakDuration, Exception? lastError);

    [LoggerMessage(5, LogLevel.Information, "Channel pool '{PoolName}' opened a channel again; its circuit breaker is closed.")]
    public static partial void BreakerClosed(ILogger logger, string poolName);

    [LoggerMessage(6, LogLevel.Debug, "Channel pool '{PoolName}' evicted channel {ChannelId}: {Reason}.")]
    public static partial void ChannelEvicted(ILogger logger, string poolName, long channelId, EvictionReason reason);

    [LoggerMessage(7, LogLevel.Debug, "Channel pool '{PoolName}' could not close channel {ChannelId} gracefully and aborted it.")]
    public static partial void CloseFailed(ILogger logger, string poolName, long channelId, Exception error);

    [LoggerMessage(8, LogLevel.Warning, "A caller timed out after {Timeout} waiting for a channel from pool '{PoolName}' ({Snapshot}).")]
    public static partial void AcquireTimedOut(ILogger logger, string poolName, TimeSpan timeout, ChannelPoolSnapshot snapshot);

    [LoggerMessage(9, LogLevel.Debug, "Channel pool '{PoolName}' pauses opening channels for {Delay} after {Failures} failed open(s) in a row.")]
    public static partial void OpensBackingOff(ILogger logger, string poolName, TimeSpan delay, int failures);

    [LoggerMessage(10, LogLevel.Information, "Channel pool '{PoolName}' is draining: closing {Idle} idle channel(s), waiting up to {DrainTimeout} for {Leased} leased channel(s).")]
    public static partial void DrainStarted(ILogger logger, string poolName, int idle, int leased, TimeSpan drainTimeout);

    [LoggerMessage(11, LogLevel.Warning, "Channel pool '{PoolName}' aborted {Count} channel(s) whose leases were not released within the drain timeout.")]
    public static partial void LeasesAbortedAtDrain(ILogger logger, string poolName, int count);

    [LoggerMessage(12, LogLevel.Information, "Channel pool '{PoolName}' is drained: {Opened} channel(s) opened and {Closed} closed over its life.")]
    public static partial void DrainCompleted(ILogger logger, string poolName, long opened, long closed);

    [LoggerMessage(14, LogLevel.Debug, "Channel pool '{PoolName}' resumes opening channels; breaker {BreakerState}, {Opens} open(s) started.")]
    public static partial void OpensResumed(ILogger logger, string poolName, BreakerState breakerState, int opens);

    [LoggerMessage(15, LogLevel.Debug, "Channel pool '{PoolName}' resume timer fired {Remaining} early; waiting on.")]
    public static partial void ResumeDeferred(ILogger logger, string poolName, TimeSpan remaining);

    [LoggerMessage(16, LogLevel.Information, "Channel pool '{PoolName}' reconfigured: PoolSize={PoolSize}, MaxChannels={MaxChannels}, RefillThreshold={RefillThreshold}, ChannelLifetime={ChannelLifetime}, LeaseMode={LeaseMode}.")]
    public static partial void PoolReconfigured(ILogger logger, string poolName, int poolSize, int maxChannels, int refillThreshold, TimeSpan channelLifetime, LeaseMode leaseMode);

    [LoggerMessage(17, LogLevel.Information, "Channel pool '{PoolName}' cleared: {Idle} idle channel(s) close now, {Leased} leased channel(s) close when their leases end, and new channels replace them.")]
    public static partial void Cleared(ILogger logger, string poolName, int idle, int leased);

    [LoggerMessage(18, LogLevel.Warning, "Channel pool '{PoolName}' cleared after a {ErrorType} that its IsFatalError rule calls fatal: {Idle} idle channel(s) close now, {Leased} leased channel(s) close when their leases end.")]
    public static partial void ClearedAfterFatalError(ILogger logger, string poolName, string errorType, int idle, int leased, Exception error);

    [LoggerMessage(19, LogLevel.Error, "The IsFatalError rule of channel pool '{PoolName}' threw while judging a {ErrorType}; the error counts as not fatal. The rule must not throw: fix it.")]
    public static partial void FatalErrorRuleFailed(ILogger logger, string poolName, string errorType, Exception ruleError);

    [LoggerMessage(20, LogLevel.Information, "Channel pool '{PoolName}' paused: it opens and hands out no channel until it is resumed ({Snapshot}).")]
    public static partial void Paused(ILogger logger, string poolName, ChannelPoolSnapshot snapshot);

    [LoggerMessage(21, LogLevel.Information, "Channel pool '{PoolName}' resumed: {Handed} waiting caller(s) served, {Evicted} parked channel(s) retired, {Opens} open(s) started.")]
    public static partial void Resumed(ILogger logger, string poolName, int handed, int evicted, int opens);

    // 22 was a repeated pause or resume, logged; it is an error since, so the id stays unused.

    [LoggerMessage(23, LogLevel.Warning, "A lease of channel {ChannelId} from pool '{PoolName}' has been held for {HeldFor}, longer than LeakDetectionThreshold ({Threshold}): probably leaked. It was acquired at:\n{AcquiredAt}")]
    public static partial void LeakFound(ILogger logger, string poolName, long channelId, TimeSpan heldFor, TimeSpan threshold, string acquiredAt);

    [LoggerMessage(24, LogLevel.Information, "The lease of channel {ChannelId} from pool '{PoolName}' reported as leaked came back after {HeldFor}.")]
    public static partial void LeakReturned(ILogger logger, string poolName, long channelId, TimeSpan heldFor);

    [LoggerMessage(13, LogLevel.Warning, "Channel pool '{PoolName}' stopped waiting for {Opening} open(s) and {Closing} close(s) still in flight at drain; they are aborted as they finish.")]
    public static partial void DrainLeftWorkInFlight(ILogger logger, string poolName, int opening, int closing);

    // 30 onwards: the adaptive idle target (IdleTarget/).
    [LoggerMessage(30, LogLevel.Debug, "Channel pool '{PoolName}' moved its idle target from {From} to {To}: peak demand {WindowPeak} over the window, {Flow} channel(s) used up while one opens.")]
    public static partial void IdleTargetMoved(ILogger logger, string poolName, int from, int to, int windowPeak, double flow);

    // 40 onwards: adaptive sharing (Sharing/). Debug: a pool that keeps failing a try logs one at each doubling delay.
    [LoggerMessage(40, LogLevel.Debug, "Channel pool '{PoolName}' stopped sharing channels: leases that shared ended {Rate:0} a second and lasted {Median} (median), against {BaselineRate:0} and {BaselineMedian} with a channel each. It tries again in {RetryIn}.")]
    public static partial void SharingStopped(ILogger logger, string poolName, double rate, TimeSpan median, double baselineRate, TimeSpan baselineMedian, TimeSpan retryIn);

    [LoggerMessage(41, LogLevel.Debug, "Channel pool '{PoolName}' shares channels: leases with a channel each ended {BaselineRate:0} a second and lasted {BaselineMedian} (median), the baseline shared leases are judged against.")]
    public static partial void SharingStarted(ILogger logger, string poolName, double baselineRate, TimeSpan baselineMedian);

    [LoggerMessage(25, LogLevel.Warning, "Channel pool '{PoolName}' was cleared, but its channel factory could not start afresh: the new channels share what the old ones shared.")]
    public static partial void RenewFailed(ILogger logger, string poolName, Exception error);

    [LoggerMessage(42, LogLevel.Debug, "Channel pool '{PoolName}' renewed its channel factory: new channels come from a fresh one (FactoryLifetime).")]
    public static partial void FactoryRenewed(ILogger logger, string poolName);
}
