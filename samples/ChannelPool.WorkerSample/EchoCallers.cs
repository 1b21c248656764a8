using ChannelPool.Testing.Tls;
using Microsoft.Extensions.Options;

namespace ChannelPool.WorkerSample;

/// <summary>
/// Callers that lease a channel from the "echo" pool, make one call, and give it back; about one call in a hundred
/// fails on purpose and marks its channel broken, so evictions for both lifetime and breakage show up.
/// </summary>
internal sealed partial class EchoCallers(
    [FromKeyedServices("echo")] DefaultChannelPool<TlsChannel> pool,
    IOptions<SampleOptions> options,
    IHostApplicationLifetime lifetime,
    ILogger<EchoCallers> logger) : BackgroundService
{
    private long _calls;
    private long _failures;

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        var sample = options.Value;
        LogStarting(logger, sample.Callers, sample.Duration);
        using var deadline = CancellationTokenSource.CreateLinkedTokenSource(stoppingToken);
        deadline.CancelAfter(sample.Duration);

        var callers = Enumerable.Range(0, sample.Callers).Select(caller => CallAsync(caller, deadline.Token));
        await Task.WhenAll(callers);

        LogFinished(logger, Interlocked.Read(ref _calls), Interlocked.Read(ref _failures), pool.GetSnapshot());
        lifetime.StopApplication();
    }

    private async Task CallAsync(int caller, CancellationToken cancellationToken)
    {
        var random = new Random(caller);
        while (!cancellationToken.IsCancellationRequested)
        {
            try
            {
                await using (var lease = await pool.AcquireAsync(cancellationToken))
                {
                    try
                    {
                        if (random.Next(100) == 0)
                        {
                            throw new IOException("A simulated network failure.");
                        }

                        await lease.Channel.EchoAsync($"caller {caller}", cancellationToken);
                        Interlocked.Increment(ref _calls);
                    }
                    catch (IOException)
                    {
                        // A failed call leaves the channel in doubt: mark it broken, so the pool never hands it out again.
                        lease.MarkBroken();
                        Interlocked.Increment(ref _failures);
                    }
                }

                // Think time between calls, with the channel back in the pool.
                await Task.Delay(random.Next(1, 20), cancellationToken);
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                return;
            }
        }
    }

    [LoggerMessage(1, LogLevel.Information, "{Callers} callers will call the echo service through the pool for {Duration}.")]
    private static partial void LogStarting(ILogger logger, int callers, TimeSpan duration);

    [LoggerMessage(2, LogLevel.Information, "Done: {Calls} calls, {Failures} simulated failures. The pool: {Snapshot}.")]
    private static partial void LogFinished(ILogger logger, long calls, long failures, ChannelPoolSnapshot snapshot);
}
