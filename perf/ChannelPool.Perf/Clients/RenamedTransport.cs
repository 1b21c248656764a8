namespace ChannelPool.Perf.Clients;

/// <summary>A transport under another name in a report (the store its node runs on, the rule its endpoint has), with the same clients and diagnostics.</summary>
/// <param name="inner">The transport.</param>
/// <param name="name">Its name in the report.</param>
internal sealed class RenamedTransport(IPubSubTransport inner, string name) : IPubSubTransport, ITransportDiagnostics
{
    public string Name => name;

    public ClientProtocol Protocol => inner.Protocol;

    public long Faults => (inner as ITransportDiagnostics)?.Faults ?? 0;

    public string? FirstFault => (inner as ITransportDiagnostics)?.FirstFault;

    public Task<IPubSubClient> ConnectAsync(NotificationHandler onNotification, CancellationToken cancellationToken) => inner.ConnectAsync(onNotification, cancellationToken);

    public ValueTask DisposeAsync() => inner.DisposeAsync();
}
