// The server the browser client's tests start (clients/polling-duplex/test/support/host.ts), and the .NET client's
// side of the browser throughput comparison (clients/polling-duplex/perf).
//   serve   [--HttpPort=0] [--Https=true] [--PollTimeoutMs=5000] [--PendingMessages=64] [--OverflowPolicy=FaultSession|GapMarker] [--FloodWindow=256] [--Pages=<dir>]
//   measure --Url=<base> --Encoding=binary|text --Seconds=5 --Streams=4 --Size=256
//   latency --Url=<base> --Encoding=binary|text --Samples=500 --IntervalMs=20
// Besides the protocol's endpoints, `serve` answers GET /floor/{binary|text}?frames=W&size=S, the perf tool's floor.
using ChannelPool.PollingDuplex.BrowserHost;

return args.FirstOrDefault() switch
{
    "measure" => await DotNetClientMeasurement.ThroughputAsync(args[1..]),
    "latency" => await DotNetClientMeasurement.LatencyAsync(args[1..]),
    _ => await BrowserTestServer.RunAsync(args.FirstOrDefault() == "serve" ? args[1..] : args),
};
