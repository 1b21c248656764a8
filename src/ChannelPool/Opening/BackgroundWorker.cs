using System.Collections.Concurrent;

namespace ChannelPool;

/// <summary>
/// The low-priority worker that opens and closes channels: a <see cref="TaskScheduler"/> over a few dedicated
/// below-normal-priority background threads, shared by every pool in the process.
/// </summary>
/// <remarks>
/// Opens and closes are queued here, never run on a caller's thread, and never occupy the thread pool. Code awaited
/// here resumes here too (the pool's awaits keep the captured scheduler), so the CPU-heavy parts of a handshake run
/// at low priority.
/// </remarks>
internal sealed class BackgroundWorker : TaskScheduler
{
    /// <summary>The process-wide worker. Two threads suffice: opens are mostly waiting on the network.</summary>
    public static readonly BackgroundWorker Shared = new(threadCount: 2);

    internal const string ThreadName = "ChannelPool background worker";

    [ThreadStatic]
    private static bool _isWorkerThread;

    private readonly BlockingCollection<Task> _queue = [];
    private readonly int _threadCount;

    private BackgroundWorker(int threadCount)
    {
        _threadCount = threadCount;
        for (var i = 0; i < threadCount; i++)
        {
            var thread = new Thread(RunWorker)
            {
                IsBackground = true,
                Priority = ThreadPriority.BelowNormal,
                Name = ThreadName,
            };
            thread.Start();
        }
    }

    /// <inheritdoc />
    public override int MaximumConcurrencyLevel => _threadCount;

    /// <summary>
    /// Runs <paramref name="work"/> on the worker, fire-and-forget. <paramref name="work"/> must not throw.
    /// </summary>
    /// <remarks>
    /// The caller's execution context does not flow: an open that a caller's lease happened to trigger is not part of
    /// that caller's request, so it must not inherit its trace parent, logging scopes or other async-local state.
    /// </remarks>
    public void Post(Func<object?, Task> work, object? state)
    {
        if (ExecutionContext.IsFlowSuppressed())
        {
            Task.Factory.StartNew(work, state, CancellationToken.None, TaskCreationOptions.DenyChildAttach, this);
            return;
        }

        using (ExecutionContext.SuppressFlow())
        {
            Task.Factory.StartNew(work, state, CancellationToken.None, TaskCreationOptions.DenyChildAttach, this);
        }
    }

    /// <inheritdoc />
    protected override void QueueTask(Task task) => _queue.Add(task);

    /// <inheritdoc />
    protected override bool TryExecuteTaskInline(Task task, bool taskWasPreviouslyQueued) =>
        _isWorkerThread && TryExecuteTask(task);

    /// <inheritdoc />
    protected override IEnumerable<Task> GetScheduledTasks() => _queue.ToArray();

    private void RunWorker()
    {
        _isWorkerThread = true;
        ThreadNiceness.LowerCurrentThread();
        foreach (var task in _queue.GetConsumingEnumerable())
        {
            TryExecuteTask(task);
        }
    }
}
