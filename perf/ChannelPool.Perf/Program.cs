using ChannelPool.Perf.Cli;

return await PerfCli.Build().Parse(args).InvokeAsync();
