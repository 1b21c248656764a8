using System.Diagnostics;
using System.Globalization;
using System.Security.Cryptography.X509Certificates;
using System.ServiceModel;
using BenchmarkDotNet.Attributes;
using ChannelPool.ServiceModel;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using ChannelPool.Testing.ServiceModel.NetTcp;

namespace ChannelPool.Benchmarks;

/// <summary>
/// What the drop-in's lease per operation costs a warm net.tcp call with TLS against a lease per proxy and a raw
/// singleton channel, one caller, all <c>Task</c> calls against the embedded test host. The proxy kinds run as the perf
/// console's proxies scenario runs them: a new proxy per call, <c>OpenAsync</c> (per operation) or <c>InnerChannel</c>
/// (per proxy), the call, <c>Close</c>; and once more with one proxy kept for every call, the operation alone.
/// </summary>
[MemoryDiagnoser]
#pragma warning disable CA1001 // BenchmarkDotNet disposes through [GlobalCleanup], not IDisposable.
public class LeasePerOperationCost
#pragma warning restore CA1001
{
    private X509Certificate2 _certificate = null!;
    private NetTcpTestHost _host = null!;
    private ChannelFactory<IEchoClient> _singletonFactory = null!;
    private IEchoClient _singleton = null!;
    private ServiceChannelPool<IEchoClient> _pool = null!;
    private Proxy _kept = null!;

    [GlobalSetup]
    public void Setup()
    {
        _certificate = TestCertificate.Create();
        _host = NetTcpTestHost.StartAsync(_certificate).GetAwaiter().GetResult();
        var address = NetTcpTestHost.CreateAddress(_host.EchoAddress);
        _singletonFactory = new ChannelFactory<IEchoClient>(NetTcpTestHost.CreateBinding(), address);
        TestCertificate.TrustOnly(_singletonFactory.Credentials, _certificate);
        _singleton = _singletonFactory.CreateChannel();
        ((ICommunicationObject)_singleton).Open();
        _pool = new ServiceChannelPool<IEchoClient>(
            NetTcpTestHost.CreateBinding(),
            address,
            new ChannelPoolOptions { PoolSize = 1, MaxLeasesPerChannel = 1 },
            factory => TestCertificate.TrustOnly(factory.Credentials, _certificate));
        _pool.WarmUpAsync(readyChannels: 1).GetAwaiter().GetResult();
        _kept = new Proxy(_pool);
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        ((ICommunicationObject)_singleton).Abort();
        _singletonFactory.Abort();
        _pool.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _host.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _certificate.Dispose();
    }

    [Benchmark(Baseline = true, Description = "singleton channel")]
    public Task<string> Singleton() => _singleton.EchoAsync("x");

    [Benchmark(Description = "proxy per call, lease per proxy (InnerChannel)")]
    public async Task<string> LeasePerProxy()
    {
        var proxy = new Proxy(_pool);
        try
        {
#pragma warning disable CPSM005 // The lease per proxy measured on purpose: the pool's one channel is idle, nothing blocks.
            _ = proxy.InnerChannel;
#pragma warning restore CPSM005
            return await proxy.EchoAsync("x").ConfigureAwait(false);
        }
        finally
        {
            proxy.Close();
        }
    }

    [Benchmark(Description = "proxy per call, lease per operation (OpenAsync)")]
    public async Task<string> LeasePerOperation()
    {
        var proxy = new Proxy(_pool);
        try
        {
            await proxy.OpenAsync().ConfigureAwait(false);
            return await proxy.EchoAsync("x").ConfigureAwait(false);
        }
        finally
        {
            proxy.Close();
        }
    }

    [Benchmark(Description = "one proxy, lease per operation")]
    public Task<string> KeptProxyLeasePerOperation() => _kept.EchoAsync("x");

    /// <summary>
    /// The same four calls timed in alternating rounds in one process, so load from elsewhere on a shared machine hits
    /// every kind alike: per kind the median over rounds of wall time and process CPU time a call (the in-process test
    /// host's share is the same for every kind), and each as a ratio to the singleton's. Run:
    /// <c>dotnet run -c Release --project perf/ChannelPool.Benchmarks -- calls-interleaved [rounds] [calls a round]</c>.
    /// </summary>
    /// <param name="rounds">How many rounds; the first tenth warms up and is dropped.</param>
    /// <param name="callsPerRound">How many calls each kind makes a round.</param>
    public static void RunInterleaved(int rounds, int callsPerRound)
    {
        var bench = new LeasePerOperationCost();
        bench.Setup();
        try
        {
            (string Name, Func<Task<string>> Call)[] kinds =
            [
                ("singleton channel", bench.Singleton),
                ("proxy per call, lease per proxy (InnerChannel)", bench.LeasePerProxy),
                ("proxy per call, lease per operation (OpenAsync)", bench.LeasePerOperation),
                ("one proxy, lease per operation", bench.KeptProxyLeasePerOperation),
            ];
            var wall = kinds.Select(_ => new List<double>()).ToArray();
            var cpu = kinds.Select(_ => new List<double>()).ToArray();
            var bytes = kinds.Select(_ => new List<double>()).ToArray();
            using var process = Process.GetCurrentProcess();
            for (var round = 0; round < rounds; round++)
            {
                // Every other round in reverse order, so no kind always follows the same one.
                for (var i = 0; i < kinds.Length; i++)
                {
                    var k = round % 2 == 0 ? i : kinds.Length - 1 - i;
                    process.Refresh();
                    var cpuBefore = process.TotalProcessorTime;
                    var allocatedBefore = GC.GetTotalAllocatedBytes(precise: true);
                    var started = Stopwatch.GetTimestamp();
                    for (var call = 0; call < callsPerRound; call++)
                    {
                        _ = kinds[k].Call().GetAwaiter().GetResult();
                    }

                    var elapsed = Stopwatch.GetElapsedTime(started);
                    var allocated = GC.GetTotalAllocatedBytes(precise: true) - allocatedBefore;
                    process.Refresh();
                    if (round >= rounds / 10)
                    {
                        wall[k].Add(elapsed.TotalMicroseconds / callsPerRound);
                        cpu[k].Add((process.TotalProcessorTime - cpuBefore).TotalMicroseconds / callsPerRound);
                        bytes[k].Add((double)allocated / callsPerRound);
                    }
                }
            }

            var wallBase = Median(wall[0]);
            var cpuBase = Median(cpu[0]);
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{rounds - (rounds / 10)} rounds of {callsPerRound:N0} calls a kind, one caller, net.tcp TLS; medians over rounds"));
            Console.WriteLine("| Kind | Wall a call | / singleton | Process CPU a call | / singleton | Allocated a call (process) | more than singleton |");
            Console.WriteLine("|---|---:|---:|---:|---:|---:|---:|");
            for (var k = 0; k < kinds.Length; k++)
            {
                Console.WriteLine(string.Create(
                    CultureInfo.InvariantCulture,
                    $"| {kinds[k].Name} | {Median(wall[k]):F1} µs | {Median(wall[k]) / wallBase:F3} | {Median(cpu[k]):F1} µs | {Median(cpu[k]) / cpuBase:F3} | {Median(bytes[k]):F0} B | {Median(bytes[k]) - Median(bytes[0]):F0} B |"));
            }
        }
        finally
        {
            bench.Cleanup();
        }
    }

    private static double Median(List<double> values) => values.Order().ElementAt(values.Count / 2);

    /// <summary>The perf console's contract: <c>Echo</c> and <c>EchoAsync</c> are one operation to WCF.</summary>
    [ServiceContract(Namespace = TestContract.Namespace, Name = nameof(IEchoService))]
    public interface IEchoClient
    {
        [OperationContract]
        string Echo(string text);

        [OperationContract]
        Task<string> EchoAsync(string text);
    }

    private sealed class Proxy(ServiceChannelPool<IEchoClient> pool) : PooledClientBase<IEchoClient>(pool)
    {
        public Task<string> EchoAsync(string text) => Channel.EchoAsync(text);
    }
}
