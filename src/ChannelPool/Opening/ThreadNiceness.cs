using System.Runtime.InteropServices;

namespace ChannelPool;

/// <summary>
/// Lowers a thread's scheduling priority on Linux, where <see cref="Thread.Priority"/> is accepted but has no effect
/// for ordinary (non-realtime) threads. Raising the nice value needs no privilege.
/// </summary>
internal static partial class ThreadNiceness
{
    /// <summary>The nice value the worker threads run at: clearly below normal (0), well above idle (19).</summary>
    internal const int WorkerNiceValue = 5;

    private const int PrioProcess = 0;

    public static void LowerCurrentThread()
    {
        if (!OperatingSystem.IsLinux())
        {
            return;
        }

        try
        {
            // With PRIO_PROCESS, Linux applies setpriority to the single thread whose id is given.
            _ = SetPriority(PrioProcess, GetThreadId(), WorkerNiceValue);
        }
        catch (Exception ex) when (ex is DllNotFoundException or EntryPointNotFoundException)
        {
            // A libc without gettid (very old glibc or an unusual runtime): Thread.Priority is all we can do.
        }
    }

    [LibraryImport("libc", EntryPoint = "setpriority", SetLastError = true)]
    private static partial int SetPriority(int which, int who, int priority);

    [LibraryImport("libc", EntryPoint = "gettid")]
    private static partial int GetThreadId();
}
