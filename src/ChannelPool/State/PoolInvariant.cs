namespace ChannelPool;

/// <summary>
/// Says whether <see cref="PoolState{TChannel}"/> checks its invariant after every transition. Debug builds always do;
/// a release build does when the <c>ChannelPool.CheckInvariants</c> <see cref="AppContext"/> switch is on, as the
/// engine's tests turn it on, so the check runs in the Release build CI tests. Off, the JIT folds it away.
/// </summary>
internal static class PoolInvariant
{
    public const string SwitchName = "ChannelPool.CheckInvariants";

#if DEBUG
    public static readonly bool IsChecked = true;
#else
    public static readonly bool IsChecked = AppContext.TryGetSwitch(SwitchName, out var on) && on;
#endif
}
