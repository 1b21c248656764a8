namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    // Set once, before the pool's first lease, when the pool serves one address of a BalancedChannelPool; null otherwise,
    // so a plain pool's lease and release pay one null check for it.
    private IEndpointObserver? _endpoint;

    /// <summary>Reports this pool's leases, releases and opens to the balanced pool's record of its address.</summary>
    internal void ObserveFor(IEndpointObserver endpoint) => _endpoint = endpoint;

    /// <summary>
    /// Turns away the callers waiting here for a channel, for the balanced pool to lease them one at another address:
    /// this address was just ejected, and its opens are failing.
    /// </summary>
    internal void RefuseWaiters(string reason)
    {
        var (waiters, warmUps, snapshot) = _state.TakeWaitersRefusedByBreaker();
        waiters?.ForEach(waiter => waiter.Fail(new ChannelPoolUnavailableException(Name, snapshot, reason, Volatile.Read(ref _lastOpenError))));
        warmUps?.ForEach(warmUp => warmUp.Done.TrySetException(new ChannelPoolUnavailableException(Name, snapshot, reason, Volatile.Read(ref _lastOpenError))));
    }
}

/// <summary>What a pool serving one address of a <see cref="BalancedChannelPool{TChannel}"/> tells the balancer.</summary>
internal interface IEndpointObserver
{
    void Leased();

    void Released(bool failed, TimeSpan held);

    void Opened();

    void OpenFailed(Exception error);

    void BreakerOpened();
}
