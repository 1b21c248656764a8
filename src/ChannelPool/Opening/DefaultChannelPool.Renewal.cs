namespace ChannelPool;

public sealed partial class DefaultChannelPool<TChannel>
{
    // Renews the factory every FactoryLifetime; infinite (never fires) when the option is off.
    private ITimer? _renewTimer;

    private void ScheduleRenewal(TimeSpan factoryLifetime)
    {
        if (factoryLifetime == Timeout.InfiniteTimeSpan && _renewTimer is null)
        {
            return;
        }

        _renewTimer ??= _timeProvider.CreateTimer(
            static state => ((DefaultChannelPool<TChannel>)state!).RenewFactory(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _renewTimer.Change(factoryLifetime, factoryLifetime);
    }

    /// <summary>
    /// New channels come from a new factory from now on; the old one serves the channels it opened until they retire.
    /// For WCF's HTTP bindings that is a new <c>HttpClient</c>, whose connections resolve the host name again.
    /// </summary>
    private void RenewFactory()
    {
        if (_state.IsDisposed)
        {
            return;
        }

        try
        {
            _factory.Renew();
            Log.FactoryRenewed(_logger, Name);
        }
        catch (Exception ex)
        {
            Log.RenewFailed(_logger, Name, ex);
        }
    }
}
