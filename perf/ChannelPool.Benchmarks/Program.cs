using BenchmarkDotNet.Running;

// Run all:    dotnet run -c Release --project perf/ChannelPool.Benchmarks -- --filter '*'
// One class:  dotnet run -c Release --project perf/ChannelPool.Benchmarks -- --filter '*Uncontended*'
BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
