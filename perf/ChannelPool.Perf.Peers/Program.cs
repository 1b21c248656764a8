using ChannelPool.Perf.Cli;
using ChannelPool.Perf.Peers;

return await PerfCli.Build(PeerConsole.Peers).Parse(args).InvokeAsync();
