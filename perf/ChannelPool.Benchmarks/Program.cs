using BenchmarkDotNet.Running;
using ChannelPool.Benchmarks;

// Run all:    dotnet run -c Release --project perf/ChannelPool.Benchmarks -- --filter '*'
// One class:  dotnet run -c Release --project perf/ChannelPool.Benchmarks -- --filter '*Uncontended*'   (or '*Contended*', '*Wait*', '*LeakDetection*')
// Interleaved (for a shared, busy machine): dotnet run -c Release --project perf/ChannelPool.Benchmarks -- interleaved [threads]
// Per-call telemetry, interleaved: dotnet run -c Release --project perf/ChannelPool.Benchmarks -- telemetry-interleaved [rounds] [calls a round]
// Call cost, interleaved: dotnet run -c Release --project perf/ChannelPool.Benchmarks -- calls-interleaved [rounds] [calls a round]
if (args is ["calls-interleaved", ..])
{
    LeasePerOperationCost.RunInterleaved(
        args.Length > 1 ? int.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 60,
        args.Length > 2 ? int.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture) : 2_000);
    return;
}

if (args is ["telemetry-interleaved", ..])
{
    CallTelemetryCost.RunInterleaved(
        args.Length > 1 ? int.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 40,
        args.Length > 2 ? int.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture) : 2_000);
    return;
}

if (args is ["interleaved", ..])
{
    Interleaved.Run(args.Length > 1 ? int.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 1);
    return;
}

BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
