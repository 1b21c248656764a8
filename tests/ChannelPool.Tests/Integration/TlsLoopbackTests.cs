using System.Collections.Concurrent;
using System.Net.Sockets;
using ChannelPool.Testing.Tls;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace ChannelPool.Tests.Integration;

/// <summary>
/// The engine over a real expensive channel: TLS connections to an echo server on 127.0.0.1 with a certificate
/// generated for the test. The pool's clock is fake, so lifetimes and breaker pauses are driven by the test, while
/// every open, call and close goes over a real socket.
/// </summary>
public class TlsLoopbackTests
{
    private FakeTimeProvider _time = null!;
    private LoopbackTlsServer _server = null!;
    private RecordingFactory _factory = null!;
    private FakeLogCollector _logs = null!;
    private LoggerFactory _log = null!;

    [SetUp]
    public void StartServer()
    {
        _time = new FakeTimeProvider();
        _logs = new FakeLogCollector();
        _log = new LoggerFactory([new FakeLoggerProvider(_logs)]);
        _server = LoopbackTlsServer.Start();
        _factory = new RecordingFactory(new TlsChannelFactory(_server.EndPoint, _server.Certificate));
    }

    [TearDown]
    public async Task StopServer()
    {
        if (TestContext.CurrentContext.Result.Outcome.Status == NUnit.Framework.Interfaces.TestStatus.Failed)
        {
            await TestContext.Out.WriteLineAsync("Pool log:\n" + string.Join("\n", _logs.GetSnapshot()));
        }

        await _server.DisposeAsync();
        _log.Dispose();
    }

    [Test]
    public async Task WarmUp_DoesTheHandshakes_SoCallsDoNone()
    {
        await using var pool = CreatePool(o => o.PoolSize = 4);

        await pool.WarmUpAsync().Within();
        await _server.WaitForHandshakesAsync(4);
        Assert.That(_server.Handshakes, Is.EqualTo(4));

        for (var i = 0; i < 100; i++)
        {
            await using var lease = await pool.AcquireAsync().Within();
            Assert.That(await lease.Channel.EchoAsync($"call {i}"), Is.EqualTo($"call {i}"));
        }

        Assert.That(_server.Handshakes, Is.EqualTo(4), "no call paid for a handshake");
    }

    [Test]
    public async Task ParallelCallers_EachGetTheirOwnChannel_AndEveryEchoMatches()
    {
        await using var pool = CreatePool(o =>
        {
            o.PoolSize = 4;
            o.MaxChannels = 6;
        });
        await pool.WarmUpAsync().Within();

        var callers = Enumerable.Range(0, 8).Select(caller => Task.Run(async () =>
        {
            for (var i = 0; i < 50; i++)
            {
                await using var lease = await pool.AcquireAsync();
                var message = $"caller {caller} call {i}";
                Assert.That(await lease.Channel.EchoAsync(message), Is.EqualTo(message));
            }
        }));
        await Task.WhenAll(callers).Within();

        Assert.That(_factory.Opened, Has.Count.LessThanOrEqualTo(6), "MaxChannels held over real sockets");
    }

    [Test]
    public async Task LifetimeEviction_ClosesTheServerSideSessionGracefully_AndRefills()
    {
        await using var pool = CreatePool(o =>
        {
            o.PoolSize = 2;
            o.ChannelLifetime = TimeSpan.FromSeconds(90);
        });
        await pool.WarmUpAsync().Within();
        var originals = _factory.Opened.ToList();

        _time.Advance(TimeSpan.FromSeconds(129));

        await Eventually.That(() => _server.GracefulCloses == 2, "the server saw both expired sessions end with close_notify");
        await Eventually.That(() => pool.GetSnapshot().Idle == 2, "the pool refilled");
        Assert.That(_factory.Opened.Except(originals).Count(), Is.EqualTo(2));
        await _server.WaitForHandshakesAsync(4);
        Assert.That(_server.Handshakes, Is.EqualTo(4));
    }

    [Test]
    public async Task ServerDown_CallersFailFast_ThenThePoolRefillsByItselfWhenTheServerReturns()
    {
        await using var pool = CreatePool(o =>
        {
            o.PoolSize = 2;
            o.MaxConcurrentOpens = 2;
            o.Resilience.Retry.MaxRetryAttempts = 0;
            o.Resilience.CircuitBreaker.MinimumThroughput = 2;
            o.Resilience.CircuitBreaker.BreakDuration = TimeSpan.FromSeconds(5);
        });
        await pool.WarmUpAsync().Within();
        var port = _server.EndPoint.Port;
        var certificate = _server.Certificate;
        var beforeOutage = _factory.Opened.ToList();

        await _server.DisposeAsync();
        await Eventually.That(() => beforeOutage.All(c => !c.IsUsable), "the client sees the server closed its connections");

        // Connection refused is instant, so the first refill open can fail, and back off, before the second starts;
        // let the fake clock run (as real time would) until the breaker has seen enough and fails the caller.
        var acquire = pool.AcquireAsync().AsTask();
        for (var step = 0; step < 100 && !acquire.IsCompleted; step++)
        {
            _time.Advance(TimeSpan.FromMilliseconds(100));
            await Task.WhenAny(acquire, Task.Delay(5));
        }

        var error = Assert.ThrowsAsync<ChannelPoolUnavailableException>(() => acquire.Within());
        Assert.That(error!.InnerException, Is.InstanceOf<SocketException>(), error.ToString());
        Assert.That(error.Message, Does.Contain("circuit breaker is open"));
        var whileOpen = pool.AcquireAsync().AsTask();
        Assert.That(whileOpen.IsFaulted, Is.True, "while the breaker is open, callers fail without waiting");
        Assert.ThrowsAsync<ChannelPoolUnavailableException>(() => whileOpen);
        var attemptsWhileDown = _factory.OpenAttempts;

        _server = LoopbackTlsServer.Start(certificate, port);
        _time.Advance(TimeSpan.FromSeconds(5));

        await Eventually.That(
            () => pool.GetSnapshot() is { Idle: 2, BreakerState: BreakerState.Closed },
            () => $"the pool refilled after the server came back (now {pool.GetSnapshot()})");
        Assert.That(_factory.OpenAttempts - attemptsWhileDown, Is.EqualTo(2), "one probe, then one refill open: no storm");
        for (var i = 0; i < 10; i++)
        {
            await using var lease = await pool.AcquireAsync().Within();
            Assert.That(beforeOutage, Does.Not.Contain(lease.Channel), "no channel from before the outage reaches a caller");
            Assert.That(await lease.Channel.EchoAsync("after"), Is.EqualTo("after"));
        }

        await pool.DrainAsync().Within();
        await Eventually.That(() => _server.OpenConnections == 0, "nothing leaked: the server holds no connection");
    }

    private DefaultChannelPool<TlsChannel> CreatePool(Action<ChannelPoolOptions> configure)
    {
        var options = new ChannelPoolOptions { Name = TestContext.CurrentContext.Test.Name, LifetimeJitter = 0 };
        configure(options);
        return new DefaultChannelPool<TlsChannel>(_factory, options, _time, _log);
    }

    /// <summary>Passes every call to the real factory and remembers the channels it opened.</summary>
    private sealed class RecordingFactory(TlsChannelFactory inner) : IPooledChannelFactory<TlsChannel>
    {
        private readonly ConcurrentQueue<TlsChannel> _opened = new();
        private int _openAttempts;

        public IReadOnlyList<TlsChannel> Opened => [.. _opened];

        public int OpenAttempts => Volatile.Read(ref _openAttempts);

        public async ValueTask<TlsChannel> OpenAsync(CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref _openAttempts);
            var channel = await inner.OpenAsync(cancellationToken);
            _opened.Enqueue(channel);
            return channel;
        }

        public bool IsUsable(TlsChannel channel) => inner.IsUsable(channel);

        public ValueTask CloseAsync(TlsChannel channel, CancellationToken cancellationToken) => inner.CloseAsync(channel, cancellationToken);

        public void Abort(TlsChannel channel) => inner.Abort(channel);
    }
}
