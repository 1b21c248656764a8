using BenchmarkDotNet.Running;
using ChannelPool.Benchmarks;

// Run all:    dotnet run -c Release --project perf/ChannelPool.Benchmarks -- --filter '*'
// One class:  dotnet run -c Release --project perf/ChannelPool.Benchmarks -- --filter '*Uncontended*'   (or '*Contended*', '*Wait*', '*LeakDetection*')
// Interleaved (for a shared, busy machine): dotnet run -c Release --project perf/ChannelPool.Benchmarks -- interleaved [threads]
if (args is ["interleaved", ..])
{
    Interleaved.Run(args.Length > 1 ? int.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 1);
    return;
}

BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
