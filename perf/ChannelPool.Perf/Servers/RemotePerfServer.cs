namespace ChannelPool.Perf.Servers;

/// <summary>A perf server somewhere else (<c>--endpoint</c>): its endpoints are known, its counters are not.</summary>
internal sealed class RemotePerfServer(PerfEndpoints endpoints) : IPerfServer
{
    public PerfEndpoints Endpoints { get; } = endpoints;

    public string Kind => "remote";

    public Task<ServerStats> GetStatsAsync(CancellationToken cancellationToken) => Task.FromResult(ServerStats.Unknown);

    public Task SettleAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;
}
