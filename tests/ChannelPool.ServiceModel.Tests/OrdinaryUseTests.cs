using System.Diagnostics;
using System.ServiceModel;
using ChannelPool.ServiceModel.Tests.Fixtures;
using ChannelPool.Testing;
using ChannelPool.Testing.ServiceModel;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace ChannelPool.ServiceModel.Tests;

/// <summary>
/// The drop-in used as people write it, from the README: calls that throw before <c>CloseAsync</c> runs, proxies
/// nobody closes, many more <c>Task</c> callers than channels, and the asynchronous programming model's pairs.
/// </summary>
[TestFixture]
[NonParallelizable]
public sealed class OrdinaryUseTests
{
    [TearDown]
    public Task DestroyPools() => Task.WhenAll(ChannelPoolFactory<IEchoService>.DestroyAsync(), ChannelPoolFactory<IApmEchoService>.DestroyAsync());

    [Test]
    public async Task AThousandFaultingCalls_WithNoClose_LeaveNoChannelHeld_AndThePoolKeepsServing([Values(Transport.NetTcp, Transport.BasicHttps)] Transport transport)
    {
        await using var service = await TestService.StartAsync(transport);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 2, MaxChannels = 4, AcquireTimeout = TimeSpan.FromSeconds(5) }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 2);
        var faults = 0;

        // The README's shape, half synchronous and half Task-based: the fault skips the close, every time.
        for (var i = 0; i < 1000; i++)
        {
            try
            {
                var proxy = new EchoProxy(pool);
                // A service time out of range is answered with a fault: the Task form's fault.
                _ = i % 2 == 0 ? proxy.Fail($"fault {i}") : await proxy.EchoAfterAsync($"fault {i}", -1);
                proxy.Close();
            }
            catch (FaultException)
            {
                faults++;
            }
        }

        Assert.That(faults, Is.EqualTo(1000), "every call got the service's fault, none a ChannelPoolTimeoutException");
        Assert.That(pool.GetSnapshot(), Has.Property(nameof(ChannelPoolSnapshot.Leased)).Zero.And.Property(nameof(ChannelPoolSnapshot.Waiting)).Zero);
        Assert.That(pool.GetSnapshot().TotalOpened, Is.LessThanOrEqualTo(4), "a fault is the service's answer: the channels were reused, not replaced");
        var after = new EchoProxy(pool);
        Assert.That(await after.EchoAfterAsync("after", 0), Is.EqualTo("after"));
    }

    [Test]
    public async Task AThousandCallsThatTimeOut_WithNoClose_LeaveNoChannelHeld_AndThePoolKeepsServing()
    {
        await using var service = await TestService.StartAsync(Transport.BasicHttps);
        var binding = SoapBindingWithTimeout(TimeSpan.FromMilliseconds(50));
        await using var pool = new ServiceChannelPool<IEchoService>(
            binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 8, MaxChannels = 50, AcquireTimeout = TimeSpan.FromSeconds(10) }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 8);
        var timedOut = 0;
        var other = new List<Exception>();

        async Task CallAsync(int i)
        {
            try
            {
                var proxy = new EchoProxy(pool);
                await proxy.EchoAfterAsync($"slow {i}", 200);
                await proxy.CloseAsync();
            }
            catch (TimeoutException)
            {
                Interlocked.Increment(ref timedOut);
            }
            catch (Exception ex)
            {
                lock (other)
                {
                    other.Add(ex);
                }
            }
        }

        foreach (var wave in Enumerable.Range(0, 20))
        {
            await Task.WhenAll(Enumerable.Range(wave * 50, 50).Select(CallAsync));
        }

        Assert.That(other, Is.Empty, "no call failed for want of a channel");
        Assert.That(timedOut, Is.EqualTo(1000));
        await Eventually.That(() => pool.GetSnapshot().Leased == 0, () => $"every timed-out call gave its channel back ({pool.GetSnapshot()})");

        // The binding's 50 ms timeout is the point of the test, so a call now could time out on a loaded machine; a
        // lease shows what matters, that a channel is there at once for the next caller.
        using var next = await pool.DefaultPool.AcquireAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(5));
        Assert.That(next.IsActive, Is.True);
    }

    [Test]
    public async Task ThreeHundredTaskCallers_OnMaxChannels126_NeverTimeOut_AndUseFewThreads()
    {
        await using var service = await TestService.StartAsync(Transport.BasicHttps);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { MaxChannels = 126 }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 1);
        var remaining = 1000;
        var failures = new List<Exception>();
        var maxThreads = ThreadPool.ThreadCount;
        using var sampling = new CancellationTokenSource();
        var sampler = Task.Run(async () =>
        {
            while (!sampling.IsCancellationRequested)
            {
                maxThreads = Math.Max(maxThreads, ThreadPool.ThreadCount);
                await Task.Delay(10);
            }
        });

        // The generated twin's shape: each caller makes a proxy, calls a Task operation, closes, with no OpenAsync first.
        var callers = Enumerable.Range(0, 300).Select(_ => Task.Run(async () =>
        {
            while (Interlocked.Decrement(ref remaining) >= 0)
            {
                try
                {
                    var proxy = new EchoProxy(pool);
                    await proxy.EchoAfterAsync("hello", 200);
                    await proxy.CloseAsync();
                }
                catch (Exception ex)
                {
                    lock (failures)
                    {
                        failures.Add(ex);
                    }
                }
            }
        }));
        await Task.WhenAll(callers);
        await sampling.CancelAsync();
        await sampler;

        Assert.That(failures, Is.Empty);
        Assert.That(service.Counters.Calls, Is.EqualTo(1000));
        Assert.That(maxThreads, Is.LessThan(32), "callers waiting for a channel held no thread-pool thread");
    }

    [Test]
    public async Task AProxyNeverClosed_DoesNotHoldUpTheDrain()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 2, DrainTimeout = TimeSpan.FromSeconds(30) }, service.Configure);
        var forgotten = new EchoProxy(pool);
        Assert.That(await forgotten.EchoAfterAsync("kept", 0), Is.EqualTo("kept"));

        var drain = Stopwatch.StartNew();
        await pool.DrainAsync();

        Assert.That(drain.Elapsed, Is.LessThan(TimeSpan.FromSeconds(10)), "the drain did not wait its 30 s DrainTimeout for the proxy");
        GC.KeepAlive(forgotten);
    }

    [Test]
    public async Task ASessionProxyNeverClosed_IsTakenBackAtDrain_UnlessACallRunsOnIt()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        var pool = new ServiceChannelPool<ISessionCounter>(
            service.Binding, service.CounterAddress, new ChannelPoolOptions { PoolSize = 1, DrainTimeout = TimeSpan.FromSeconds(30) }, service.Configure);
        var forgotten = new CounterProxy(pool);
        Assert.That(forgotten.Increment(), Is.EqualTo(1));
        Assert.That(pool.GetSnapshot().Leased, Is.EqualTo(1), "a session proxy holds its channel between calls");

        var drain = Stopwatch.StartNew();
        await pool.DrainAsync();

        Assert.That(drain.Elapsed, Is.LessThan(TimeSpan.FromSeconds(10)), "the drain took the idle session back rather than wait 30 s for the proxy");
        Assert.That(pool.GetSnapshot().Leased, Is.Zero);
        GC.KeepAlive(forgotten);
    }

    [Test]
    public async Task ASessionContractsProxy_KeepsOneSessionAcrossItsCalls_AsyncFirstUseIncluded()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<ISessionCounter>(service.Binding, service.CounterAddress, new ChannelPoolOptions { PoolSize = 2 }, service.Configure);
        var proxy = new CounterProxy(pool);

        var counts = new[] { proxy.Increment(), proxy.Increment(), proxy.Increment() };
        proxy.Close();

        Assert.That(counts, Is.EqualTo(new[] { 1, 2, 3 }), "one session: the service's counter went on from call to call");
        Assert.That(pool.GetSnapshot().Leased, Is.Zero);
    }

    /// <summary>
    /// SingleUse set by hand on a contract without sessions (docs/architecture.md: for a service that keeps state per
    /// channel): a proxy gets one fresh channel for its life, as the original did, not one per call and one more for
    /// OpenAsync.
    /// </summary>
    [Test]
    public async Task ASingleUseProxy_SpendsOneChannel_OpenAsyncAndAllItsCallsIncluded()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IEchoService>(
            service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 2, LeaseMode = LeaseMode.SingleUse }, service.Configure);
        await pool.WarmUpAsync(readyChannels: 2);
        var closedBefore = pool.GetSnapshot().TotalClosed;

        var proxy = new EchoProxy(pool);
        await proxy.OpenAsync();
        var replies = new[] { await proxy.EchoAfterAsync("a", 0), proxy.Echo("b"), await proxy.EchoAfterAsync("c", 0) };
        await proxy.CloseAsync();

        Assert.That(replies, Is.EqualTo(new[] { "a", "b", "c" }));
        await Eventually.That(() => pool.GetSnapshot().TotalClosed > closedBefore, "the proxy's channel closed after its one use");
        Assert.That(pool.GetSnapshot().TotalClosed - closedBefore, Is.EqualTo(1), "one channel spent for the proxy's open and three calls");
    }

    [Test]
    public async Task ASessionProxyDroppedWithoutClose_GivesItsChannelBackWhenCollected()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<ISessionCounter>(
            service.Binding, service.CounterAddress, new ChannelPoolOptions { PoolSize = 1, MaxChannels = 1, AcquireTimeout = TimeSpan.FromSeconds(5) }, service.Configure);

        UseAndDrop(pool);
        await Eventually.That(
            () =>
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
                return pool.GetSnapshot().Leased == 0;
            },
            () => $"the dropped proxy's channel came back ({pool.GetSnapshot()})");

        var next = new CounterProxy(pool);
        Assert.That(next.Increment(), Is.EqualTo(1), "the one slot served a new session: the dropped one's channel was aborted, not handed on");
        next.Close();
    }

    [Test]
    public async Task TheAsynchronousProgrammingModel_BeginAndEnd_LeaseForTheCallOnly()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        await using var pool = new ServiceChannelPool<IApmEchoService>(service.Binding, service.EchoAddress, new ChannelPoolOptions { PoolSize = 1 }, service.Configure);
        var proxy = new ApmEchoProxy(pool);
        var completed = new TaskCompletionSource<string>();

        var pending = proxy.BeginEcho("begun", result => completed.SetResult(proxy.EndEcho(result)), state: "mine");

        Assert.That(await completed.Task.WaitAsync(Eventually.Limit), Is.EqualTo("begun"));
        Assert.That(pending.AsyncState, Is.EqualTo("mine"));
        await Eventually.That(() => pool.GetSnapshot().Leased == 0, "the call's channel went back after End");
    }

    [Test]
    public async Task ALeakedLease_ThroughTheStaticFacade_IsLoggedWithTheCallersFrameFirst()
    {
        await using var service = await TestService.StartAsync(Transport.NetTcp);
        var logs = new FakeLogCollector();
        using var loggers = new LoggerFactory([new FakeLoggerProvider(logs)]);
        ChannelPoolFactory<IEchoService>.Initialize(
            service.Binding, service.EchoAddress, service.Configure, new ChannelPoolOptions { PoolSize = 1, LeakDetectionThreshold = TimeSpan.FromMilliseconds(100) }, loggers);

        var proxy = new EchoProxy();
        var slow = proxy.EchoAfterAsync("held", 1500);
        await Eventually.That(() => logs.GetSnapshot().Any(r => r.Id.Id == 23), "the leak scan logged the held lease");
        Assert.That(await slow, Is.EqualTo("held"));

        var leak = logs.GetSnapshot().First(r => r.Id.Id == 23);
        var stack = leak.Message[(leak.Message.IndexOf("acquired at:", StringComparison.Ordinal) + "acquired at:".Length)..].TrimStart();
        // The proxy method's own frame, unless the optimizing JIT made its one call a tail call (it did in a full run,
        // once the method was hot): then the frame that called it, this test, comes first. Never a frame of ours.
        Assert.That(
            stack,
            Does.StartWith($"at {typeof(EchoProxy).FullName}.{nameof(EchoProxy.EchoAfterAsync)}").Or.StartWith($"at {typeof(OrdinaryUseTests).FullName}."),
            "the first frame is the application's own: its proxy method, or its caller when the JIT tail-called through it");
    }

    private static BasicHttpsBinding SoapBindingWithTimeout(TimeSpan timeout)
    {
        var binding = Testing.ServiceModel.Soap.SoapTestHost.CreateBasicBinding();
        binding.SendTimeout = timeout;
        return binding;
    }

    // Out of line so that nothing on this method's frame keeps the proxy alive for the collector.
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static void UseAndDrop(ServiceChannelPool<ISessionCounter> pool)
    {
        var proxy = new CounterProxy(pool);
        Assert.That(proxy.Increment(), Is.EqualTo(1));
    }
}
